// The models already on this machine: GGUF files found in the Hugging Face cache, Ollama's store,
// LM Studio's folders and Strata's own folder, each with the name a user types for it
// ("Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M", "qwen2.5-coder:0.5b", a file stem). A store that is
// damaged (bad manifest, missing blob, a path that leaves the store) gives a warning for that
// entry and the scan goes on; nothing found on disk throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

enum class ModelSource { HfCache, Ollama, LmStudio, Strata };

std::string_view model_source_name(ModelSource source);  // "hf-cache", "ollama", "lm-studio", "strata"

// A folder that may hold models, with where its location came from ("HF_HUB_CACHE", "default").
struct ModelPlace {
    ModelSource source;
    std::string path;
    std::string origin;
};

// The places to look, from the environment (CACHE = XDG_CACHE_HOME, else ~/.cache): HF_HUB_CACHE,
// else HF_HOME/hub, else CACHE/huggingface/hub; OLLAMA_MODELS, else ~/.ollama/models;
// ~/.lmstudio/models and ~/.cache/lm-studio/models; STRATA_MODELS, else CACHE/strata/models.
std::vector<ModelPlace> model_places_from_env();

// Strata's own folder (where `strata pull` writes): STRATA_MODELS, else CACHE/strata/models.
std::string strata_models_dir();

struct ModelEntry {
    std::string name;     // what the user types
    std::string file;     // the GGUF file's own name ("sha256-<hex>" for an Ollama blob)
    std::string path;     // the file to open
    ModelSource source = ModelSource::Strata;
    uint64_t size = 0;    // bytes
    std::string arch;     // general.architecture; empty when the header was not read
    std::string quant;    // general.file_type's name ("Q4_K_M"); empty when unknown
};

struct ModelCatalog {
    std::vector<ModelEntry> entries;    // sorted by name
    std::vector<std::string> warnings;  // one line each, naming the entry and what is wrong
    std::vector<ModelPlace> places;     // where it looked
};

struct CatalogOptions {
    // Read each file's GGUF header for the architecture and the file type (strata list); name
    // resolution leaves it off. A file that is not valid GGUF is then a warning.
    bool read_headers = false;
};

ModelCatalog scan_models(const std::vector<ModelPlace>& places, const CatalogOptions& options = {});

}  // namespace strata
