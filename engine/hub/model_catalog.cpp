// The model catalog: where to look, and one scan over every store (see model_catalog.h).
#include "engine/hub/model_catalog.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/hub/catalog_scan.h"
#include "engine/model/file_type.h"

namespace strata {
namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

std::string home() {
    std::string h = env("HOME");
    return h.empty() ? "/root" : h;
}

// XDG_CACHE_HOME, else ~/.cache (as Strata's other caches and huggingface_hub).
std::string cache_home() {
    std::string x = env("XDG_CACHE_HOME");
    return x.empty() ? home() + "/.cache" : x;
}

// The architecture and file type from the GGUF header; a file that is not valid GGUF is a
// warning and stays listed without them.
void read_header(ModelEntry& e, std::vector<std::string>& warnings) {
    try {
        const GgufFile file(e.path);
        if (const GgufValue* v = file.find("general.architecture"); v && v->type() == GgufType::STRING) {
            e.arch = v->as_string("general.architecture");
        }
        if (const GgufValue* v = file.find("general.file_type"); v && v->is_integer()) {
            e.quant = file_type_name(v->as_int("general.file_type"));
        }
    } catch (const Error& err) {
        warnings.push_back(cat(e.name, ": ", e.path, " is not a GGUF model Strata can read: ", err.what()));
    }
}

}  // namespace

std::string_view model_source_name(ModelSource source) {
    switch (source) {
        case ModelSource::HfCache: return "hf-cache";
        case ModelSource::Ollama: return "ollama";
        case ModelSource::LmStudio: return "lm-studio";
        case ModelSource::Strata: return "strata";
    }
    return "?";
}

std::string strata_models_dir() {
    const std::string own = env("STRATA_MODELS");
    return own.empty() ? cache_home() + "/strata/models" : own;
}

std::vector<ModelPlace> model_places_from_env() {
    std::vector<ModelPlace> places;
    if (std::string v = env("HF_HUB_CACHE"); !v.empty()) {
        places.push_back({ModelSource::HfCache, v, "HF_HUB_CACHE"});
    } else if (std::string h = env("HF_HOME"); !h.empty()) {
        places.push_back({ModelSource::HfCache, h + "/hub", "HF_HOME"});
    } else {
        places.push_back({ModelSource::HfCache, cache_home() + "/huggingface/hub", "default"});
    }
    if (std::string v = env("OLLAMA_MODELS"); !v.empty()) {
        places.push_back({ModelSource::Ollama, v, "OLLAMA_MODELS"});
    } else {
        places.push_back({ModelSource::Ollama, home() + "/.ollama/models", "default"});
    }
    places.push_back({ModelSource::LmStudio, home() + "/.lmstudio/models", "default"});
    places.push_back({ModelSource::LmStudio, home() + "/.cache/lm-studio/models", "default"});
    places.push_back({ModelSource::Strata, strata_models_dir(),
                      env("STRATA_MODELS").empty() ? "default" : "STRATA_MODELS"});
    return places;
}

ModelCatalog scan_models(const std::vector<ModelPlace>& places, const CatalogOptions& options) {
    ModelCatalog catalog;
    catalog.places = places;
    for (const ModelPlace& place : places) {
        std::error_code ec;
        if (!std::filesystem::is_directory(place.path, ec)) continue;
        switch (place.source) {
            case ModelSource::HfCache: hub_detail::scan_hf_cache(place, catalog); break;
            case ModelSource::Ollama: hub_detail::scan_ollama(place, catalog); break;
            case ModelSource::LmStudio:
            case ModelSource::Strata: hub_detail::scan_model_folder(place, catalog); break;
        }
    }
    if (options.read_headers) {
        for (ModelEntry& e : catalog.entries) read_header(e, catalog.warnings);
    }
    std::stable_sort(catalog.entries.begin(), catalog.entries.end(),
                     [](const ModelEntry& a, const ModelEntry& b) { return a.name < b.name; });
    return catalog;
}

}  // namespace strata
