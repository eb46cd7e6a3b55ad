// general.file_type values (llama_ftype): what "a Q4_K_M file" means, by id and name.
#pragma once

#include <cstdint>
#include <string>

namespace strata {

// The ids Strata writes (synth); others are only named.
enum class FileType : int64_t {
    AllF32 = 0,
    MostlyF16 = 1,
    MostlyQ8_0 = 7,
    MostlyQ4_K_M = 15,
    MostlyIQ2_XXS = 19,
    MostlyIQ2_XS = 20,
    MostlyIQ3_XXS = 23,
    MostlyIQ1_S = 24,
    MostlyIQ3_S = 26,
    MostlyIQ2_S = 28,
    MostlyIQ1_M = 31,
    MostlyTQ1_0 = 36,
    MostlyTQ2_0 = 37,
};

// "Q4_K_M", "F16", "BF16", ...; "unknown (N)" for ids not in the table, "" for -1 (absent).
std::string file_type_name(int64_t file_type);

}  // namespace strata
