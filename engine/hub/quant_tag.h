// Quantization tags in GGUF file names, as the Hugging Face hub and llama.cpp's `-hf repo:quant`
// use them: "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf" carries "Q4_K_M".
#pragma once

#include <string>
#include <string_view>

namespace strata {

// The last '-' or '.' separated word of the name (".gguf" dropped) that reads as a quantization
// type (Q4_K_M, IQ4_XS, Q8_0, F16, BF16, ...), upper-cased; "" when there is none.
std::string quant_tag_of(std::string_view file_name);

// ASCII case-insensitive equality and prefix test (model names and quant tags).
bool iequals(std::string_view a, std::string_view b);
bool istarts_with(std::string_view text, std::string_view prefix);

// True for "name.gguf" (any case).
bool is_gguf_name(std::string_view file_name);

// Split models: "NAME-00002-of-00005.gguf" is part 2 of 5; {0, 0} for a name of another form.
struct SplitPart {
    int index = 0;
    int count = 0;
};
SplitPart split_part_of(std::string_view file_name);

// A file name without its ".gguf".
std::string gguf_stem(std::string_view file_name);

}  // namespace strata
