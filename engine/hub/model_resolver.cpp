// Model names to files (see model_resolver.h).
#include "engine/hub/model_resolver.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <system_error>

#include "engine/hub/quant_tag.h"
#include "engine/core/byte_size.h"

namespace strata {
namespace {

using Rule = std::function<bool(const ModelEntry&)>;

bool iends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && iequals(text.substr(text.size() - suffix.size()), suffix);
}

std::vector<const ModelEntry*> match_rule(const ModelCatalog& catalog, const Rule& rule) {
    std::vector<const ModelEntry*> out;
    std::vector<std::string> files;  // one entry per file: the same file in two stores is one
    for (const ModelEntry& e : catalog.entries) {
        if (!rule(e)) continue;
        std::error_code ec;
        std::string real = std::filesystem::weakly_canonical(e.path, ec).string();
        if (ec) real = e.path;
        if (std::find(files.begin(), files.end(), real) != files.end()) continue;
        files.push_back(real);
        out.push_back(&e);
    }
    return out;
}

constexpr size_t kMaxListed = 40;

}  // namespace

std::vector<const ModelEntry*> match_model_name(const ModelCatalog& catalog, std::string_view name) {
    if (name.empty()) return {};
    const std::string latest = cat(name, ":latest");
    const std::string owner_left_out = cat("/", name);
    const std::vector<Rule> rules = {
        [&](const ModelEntry& e) {
            return iequals(e.name, name) || iequals(e.file, name) || iequals(gguf_stem(e.file), name) ||
                   iequals(e.name, latest);
        },
        [&](const ModelEntry& e) { return iends_with(e.name, owner_left_out); },
        [&](const ModelEntry& e) { return istarts_with(e.name, name) || istarts_with(e.file, name); },
        [&](const ModelEntry& e) {  // "base:QUANT": the quant of the file name, a prefix before it
            const size_t colon = name.rfind(':');
            if (colon == std::string_view::npos || colon + 1 == name.size()) return false;
            const std::string_view base = name.substr(0, colon);
            return iequals(quant_tag_of(e.file), name.substr(colon + 1)) &&
                   (istarts_with(e.name, base) || istarts_with(e.file, base) || iends_with(e.name.substr(0, e.name.find(':')), cat("/", base)));
        },
    };
    for (const Rule& rule : rules) {
        std::vector<const ModelEntry*> found = match_rule(catalog, rule);
        if (!found.empty()) return found;
    }
    return {};
}

bool is_existing_path(std::string_view text) {
    std::error_code ec;
    return std::filesystem::exists(std::filesystem::path(text), ec);
}

std::string describe_catalog(const ModelCatalog& catalog) {
    std::string out;
    if (catalog.entries.empty()) out += "no models found\n";
    size_t shown = 0;
    for (const ModelEntry& e : catalog.entries) {
        if (++shown > kMaxListed) {
            out += cat("  ... and ", catalog.entries.size() - kMaxListed, " more (strata list)\n");
            break;
        }
        out += cat("  ", e.name, "  ", format_bytes(e.size), "  ", e.path, "\n");
    }
    out += "looked in:\n";
    for (const ModelPlace& p : catalog.places) {
        size_t n = 0;
        for (const ModelEntry& e : catalog.entries) {
            if (e.path.starts_with(p.path + "/")) ++n;
        }
        std::error_code ec;
        const bool there = std::filesystem::is_directory(p.path, ec);
        out += cat("  ", p.path, " (", model_source_name(p.source), ", ", p.origin, "): ",
                   there ? cat(n, n == 1 ? " model" : " models") : std::string("not there"), "\n");
    }
    return out;
}

const ModelEntry& find_model(const ModelCatalog& catalog, std::string_view name) {
    const std::vector<const ModelEntry*> found = match_model_name(catalog, name);
    if (found.size() == 1) return *found.front();
    if (found.empty()) {
        throw ModelNameError(
            cat("no model file or model named '", name, "' (", catalog.entries.size(),
                catalog.entries.size() == 1 ? " model" : " models",
                " found; 'strata list' shows them, 'strata pull owner/repo:QUANT' downloads one)"),
            "models found:\n" + describe_catalog(catalog));
    }
    std::string details = "candidates:\n", names;
    for (const ModelEntry* e : found) {
        details += cat("  ", e->name, "  ", e->path, "\n");
        if (names.size() < 400) names += (names.empty() ? "" : ", ") + e->name;
    }
    throw ModelNameError(cat("model name '", name, "' matches ", found.size(), " models: ", names,
                             "; give one of the names in full"),
                         details);
}

}  // namespace strata
