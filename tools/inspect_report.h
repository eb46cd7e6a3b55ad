// What `strata inspect` reports about a model, computed once and printed as text
// (cmd_inspect.cpp) or JSON (inspect_json.cpp).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/gguf/model_file.h"
#include "engine/model/model_config.h"
#include "engine/model/model_summary.h"

namespace strata::cli {

struct InspectReport {
    const ModelFile& file;
    ModelConfig config;
    ModelSummary summary;

    // Text of token `id`, "" when the id is -1 or the file has no token list.
    std::string token_text(int64_t id) const;
};

// Same content as the text report; `with_metadata` adds every key as a display string.
nlohmann::ordered_json inspect_json(const InspectReport& report, bool with_metadata);

}  // namespace strata::cli
