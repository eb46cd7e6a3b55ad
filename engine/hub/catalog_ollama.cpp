// Scanner for Ollama's store: manifests/<host>/<namespace>/<model>/<tag> are JSON files whose
// layer of media type application/vnd.ollama.image.model names the GGUF blob by digest
// (blobs/sha256-<hex>). Manifests are untrusted: read bounded, and a digest that is not exactly
// "sha256:" and 64 hex digits (a "../" escape) is refused by name.
#include <algorithm>
#include <cctype>
#include <system_error>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/hub/catalog_scan.h"

namespace strata::hub_detail {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kMaxManifestBytes = 1 << 20;
constexpr std::string_view kModelMediaType = "application/vnd.ollama.image.model";
constexpr std::string_view kDefaultHost = "registry.ollama.ai";

// "qwen2.5-coder:0.5b", "user/model:tag", "hf.co/user/repo:tag": Ollama's short forms.
std::string ollama_name(const std::vector<std::string>& parts) {
    const std::string& host = parts[0];
    const std::string& ns = parts[1];
    std::string base = parts[2];
    if (ns != "library" || host != kDefaultHost) base = ns + "/" + base;
    if (host != kDefaultHost) base = host + "/" + base;
    return base + ":" + parts[3];
}

bool is_sha256_digest(const std::string& d) {
    if (d.size() != 7 + 64 || !d.starts_with("sha256:")) return false;
    return std::all_of(d.begin() + 7, d.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
    });
}

// The model layer of a manifest; throws FormatError naming what is wrong.
const nlohmann::json& model_layer(const nlohmann::json& manifest) {
    if (!manifest.is_object() || !manifest.contains("layers") || !manifest["layers"].is_array()) {
        throw FormatError("no \"layers\" array");
    }
    for (const auto& layer : manifest["layers"]) {
        if (layer.is_object() && layer.value("mediaType", "") == kModelMediaType) return layer;
    }
    throw FormatError(cat("no layer of media type ", kModelMediaType));
}

void add_manifest(const fs::path& root, const fs::path& manifest_path,
                  const std::vector<std::string>& parts, ModelCatalog& catalog) {
    const std::string name = ollama_name(parts);
    try {
        const nlohmann::json manifest = read_json_file(
            manifest_path.string(), "Ollama manifest", ReadOptions{kMaxManifestBytes, false});
        const nlohmann::json& layer = model_layer(manifest);
        const auto digest_it = layer.find("digest");
        const std::string digest =
            digest_it != layer.end() && digest_it->is_string() ? digest_it->get<std::string>() : "";
        if (!is_sha256_digest(digest)) {
            throw FormatError(cat("model digest '", digest.substr(0, 80),
                                  "' is not \"sha256:\" and 64 hex digits"));
        }
        ModelEntry e;
        e.name = name;
        e.file = "sha256-" + digest.substr(7);
        e.path = (root / "blobs" / e.file).string();
        e.source = ModelSource::Ollama;
        const size_t before = catalog.entries.size();
        add_model_file(catalog, e, "Ollama blob");
        const auto size_it = layer.find("size");
        if (catalog.entries.size() > before && size_it != layer.end() && size_it->is_number_unsigned() &&
            size_it->get<uint64_t>() != catalog.entries.back().size) {
            catalog.warnings.push_back(cat(name, ": Ollama blob ", e.path, " has ",
                                           catalog.entries.back().size, " bytes, its manifest says ",
                                           size_it->get<uint64_t>(), " (an unfinished pull?)"));
        }
    } catch (const Error& e) {
        catalog.warnings.push_back(cat(name, ": Ollama manifest ", manifest_path.string(), ": ",
                                       e.what(), "; skipped"));
    } catch (const nlohmann::json::exception& e) {
        catalog.warnings.push_back(cat(name, ": Ollama manifest ", manifest_path.string(), ": ",
                                       e.what(), "; skipped"));
    }
}

}  // namespace

void scan_ollama(const ModelPlace& place, ModelCatalog& catalog) {
    const fs::path root(place.path);
    const fs::path manifests = root / "manifests";
    std::error_code ec;
    fs::recursive_directory_iterator it(manifests, fs::directory_options::skip_permission_denied, ec);
    size_t visited = 0;
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (++visited > 100000) break;
        if (it.depth() == 3) {  // host/namespace/model/tag
            it.disable_recursion_pending();
            const fs::path rel = it->path().lexically_relative(manifests);
            std::vector<std::string> parts;
            for (const auto& p : rel) parts.push_back(p.string());
            if (parts.size() == 4 && !it->is_directory(ec)) add_manifest(root, it->path(), parts, catalog);
        }
    }
}

}  // namespace strata::hub_detail
