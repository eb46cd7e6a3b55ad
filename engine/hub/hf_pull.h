// `strata pull owner/repo[:QUANT]` and `-hf`: one GGUF file of a Hugging Face hub repository,
// downloaded (resumable, resumable_download.h) into Strata's folder as
// <STRATA_MODELS or ~/.cache/strata/models>/owner/repo/<file>.gguf, where the catalog names it
// "owner/repo:QUANT". The hub is https://huggingface.co or HF_ENDPOINT; HF_TOKEN, when set, is
// sent to it (gated repositories).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct HfRef {
    std::string repo;   // "owner/name"
    std::string quant;  // "Q4_K_M"; empty: the default choice
};

// Parses "owner/name[:QUANT]"; throws ArgumentError naming the expected form.
HfRef parse_hf_ref(std::string_view text);

struct HfFile {
    std::string path;    // inside the repository ("sub/x-Q4_K_M.gguf")
    int64_t size = -1;   // -1: the file list did not say
};

// The GGUF file of `files` that `ref` asks for: the one whose quantization tag is ref.quant;
// without a quant Q4_K_M, else the only GGUF file. Vision projectors (mmproj*) are never
// chosen. Throws ArgumentError listing the repository's GGUF files when none or several match.
const HfFile& choose_hf_file(const HfRef& ref, const std::vector<HfFile>& files);

struct PullOptions {
    std::string endpoint;     // empty: HF_ENDPOINT, else https://huggingface.co
    std::string models_dir;   // empty: strata_models_dir()
    std::function<void(std::string_view file, uint64_t done, int64_t total)> on_progress;
};

struct PullResult {
    std::string path;      // the complete local file
    std::string name;      // its catalog name, "owner/repo:QUANT"
    uint64_t bytes = 0;
    uint64_t resumed_from = 0;
    bool already_there = false;
};

// Lists the repository's files (GET <endpoint>/api/models/<repo>?blobs=true), chooses one and
// downloads <endpoint>/<repo>/resolve/main/<file>. Errors: ArgumentError (bad reference, no
// such quant, listing what there is), HttpStatusError (404: no such repository; 401/403: gated),
// SystemError (network; a broken transfer keeps its part file for the next call).
PullResult pull_hf_model(const HfRef& ref, const PullOptions& options);

}  // namespace strata
