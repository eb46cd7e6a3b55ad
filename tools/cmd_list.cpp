// strata list: the GGUF models already on this machine (Hugging Face cache, Ollama, LM Studio,
// Strata's folder) with the names -m accepts, as a table or (--json) JSON. Warnings about
// damaged store entries go to stderr.
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "engine/hub/model_catalog.h"
#include "engine/hub/model_resolver.h"
#include "engine/core/byte_size.h"
#include "tools/commands.h"

namespace strata::cli {
namespace {

nlohmann::json to_json(const ModelCatalog& catalog) {
    nlohmann::json j;
    j["models"] = nlohmann::json::array();
    for (const ModelEntry& e : catalog.entries) {
        j["models"].push_back({{"name", e.name}, {"path", e.path}, {"file", e.file}, {"bytes", e.size},
                               {"source", model_source_name(e.source)}, {"architecture", e.arch},
                               {"type", e.quant}});
    }
    j["places"] = nlohmann::json::array();
    for (const ModelPlace& p : catalog.places) {
        j["places"].push_back({{"path", p.path}, {"source", model_source_name(p.source)}, {"from", p.origin}});
    }
    j["warnings"] = catalog.warnings;
    return j;
}

void print_table(const ModelCatalog& catalog) {
    size_t w_name = 4, w_arch = 4;
    for (const ModelEntry& e : catalog.entries) {
        w_name = std::max(w_name, e.name.size());
        w_arch = std::max(w_arch, e.arch.size());
    }
    const int wn = static_cast<int>(w_name), wa = static_cast<int>(w_arch);
    std::printf("%-*s  %10s  %-*s  %-8s  %-9s  %s\n", wn, "NAME", "SIZE", wa, "ARCH", "TYPE", "SOURCE", "PATH");
    for (const ModelEntry& e : catalog.entries) {
        std::printf("%-*s  %10s  %-*s  %-8s  %-9s  %s\n", wn, e.name.c_str(), format_bytes(e.size).c_str(), wa,
                    e.arch.empty() ? "?" : e.arch.c_str(), e.quant.empty() ? "?" : e.quant.c_str(),
                    std::string(model_source_name(e.source)).c_str(), e.path.c_str());
    }
    if (catalog.entries.empty()) {
        std::printf("no GGUF models found; looked in:\n");
        for (const ModelPlace& p : catalog.places) std::printf("  %s (%s)\n", p.path.c_str(), p.origin.c_str());
        std::printf("'strata pull owner/repo:QUANT' downloads one from the Hugging Face hub\n");
    }
}

}  // namespace

void add_list_command(CLI::App& app) {
    auto json = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("list", "list the GGUF models on this machine and their names for -m");
    cmd->add_flag("--json", *json, "print JSON instead of a table");
    cmd->callback([json] {
        CatalogOptions options;
        options.read_headers = true;
        const ModelCatalog catalog = scan_models(model_places_from_env(), options);
        for (const std::string& w : catalog.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
        if (*json) {
            std::cout << to_json(catalog).dump(2) << "\n";
        } else {
            print_table(catalog);
        }
    });
}

}  // namespace strata::cli
