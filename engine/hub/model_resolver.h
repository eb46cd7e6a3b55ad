// Model names to files: what `-m` accepts besides a path. A path that exists wins; otherwise the
// name is looked up in the catalog (model_catalog.h), case-insensitively, rule by rule, and the
// first rule that matches anything decides:
//   1. exact: the entry's name, its file name or file stem ("qwen2.5-coder" also = ":latest");
//   2. owner left out: "Repo-GGUF:Q4_K_M" for "owner/Repo-GGUF:Q4_K_M";
//   3. prefix: "owner/repo" for "owner/repo:Q4_K_M", "qwen2.5" for "qwen2.5-coder:0.5b";
//   4. prefix and quant: "qwen2.5-coder:q4_k_m" for the file qwen2.5-coder-0.5b-instruct-q4_k_m.gguf.
// One file matched: that file. None or several: ModelNameError.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"
#include "engine/hub/model_catalog.h"

namespace strata {

// A name that matches no model, or several. what() is one line; details() lists the candidates
// (ambiguous) or every model found and every place looked (no match), one per line.
class ModelNameError : public ArgumentError {
  public:
    ModelNameError(const std::string& summary, std::string details)
        : ArgumentError(summary), details_(std::move(details)) {}
    const std::string& details() const { return details_; }

  private:
    std::string details_;
};

// The entries `name` matches under the first rule that matches any (see above); distinct files.
std::vector<const ModelEntry*> match_model_name(const ModelCatalog& catalog, std::string_view name);

// The catalog entry for `name`; throws ModelNameError.
const ModelEntry& find_model(const ModelCatalog& catalog, std::string_view name);

// True when `text` names an existing file or folder (then it is a path, not a name).
bool is_existing_path(std::string_view text);

// "name  size  path" lines of the catalog and "place (origin): N models | missing" lines.
std::string describe_catalog(const ModelCatalog& catalog);

}  // namespace strata
