// Names of general.file_type values (llama_ftype ids, docs/FORMATS.md §1.8 and §2.6).
#include "engine/model/file_type.h"

#include <array>
#include <string_view>
#include <utility>

#include "engine/core/error.h"

namespace strata {
namespace {

constexpr std::array<std::pair<int64_t, std::string_view>, 34> kNames = {{
    {0, "F32"},      {1, "F16"},      {2, "Q4_0"},       {3, "Q4_1"},     {7, "Q8_0"},
    {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},      {11, "Q3_K_S"},  {12, "Q3_K_M"},
    {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"},    {16, "Q5_K_S"},  {17, "Q5_K_M"},
    {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"},    {21, "Q2_K_S"},  {22, "IQ3_XS"},
    {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"},    {26, "IQ3_S"},   {27, "IQ3_M"},
    {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"},    {31, "IQ1_M"},   {32, "BF16"},
    {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4_MOE"}, {4, "Q4_1_F16"},
}};

}  // namespace

std::string file_type_name(int64_t file_type) {
    if (file_type < 0) return "";
    for (const auto& [id, name] : kNames) {
        if (id == file_type) return std::string(name);
    }
    return cat("unknown (", file_type, ")");
}

}  // namespace strata
