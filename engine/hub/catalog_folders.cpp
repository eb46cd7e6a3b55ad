// Scanners for stores of plain files: the Hugging Face cache (snapshots of repositories), and
// the LM Studio and Strata folders (loose files and publisher/repo folders).
#include <algorithm>
#include <cctype>
#include <system_error>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/hub/catalog_scan.h"
#include "engine/hub/quant_tag.h"

namespace strata::hub_detail {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxFolderDepth = 4;     // publisher/repo/sub/sub/file
constexpr size_t kMaxVisited = 100000;  // entries one walk looks at before it stops

bool inside(const fs::path& path, const fs::path& root) {
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(path, ec);
    const fs::path real_root = fs::weakly_canonical(root, ec);
    if (ec) return false;
    auto [r, p] = std::mismatch(real_root.begin(), real_root.end(), real.begin(), real.end());
    return r == real_root.end();
}

// The snapshot folder refs/main names, or "" when there is no usable ref.
std::string main_revision(const fs::path& repo_dir, ModelCatalog& catalog) {
    const fs::path ref = repo_dir / "refs" / "main";
    std::error_code ec;
    if (!fs::exists(ref, ec)) return "";
    try {
        std::string rev = read_bounded_file(ref.string(), "Hugging Face cache ref",
                                            ReadOptions{4096, false});
        while (!rev.empty() && std::isspace(static_cast<unsigned char>(rev.back()))) rev.pop_back();
        for (char c : rev) {
            if (!std::isalnum(static_cast<unsigned char>(c))) {
                throw FormatError(cat("'", rev.substr(0, 60), "' is not a revision hash"));
            }
        }
        return rev;
    } catch (const Error& e) {
        catalog.warnings.push_back(cat(ref.string(), ": ", e.what(), "; looking at every snapshot"));
        return "";
    }
}

void scan_hf_repo(const fs::path& repo_dir, std::string_view repo, ModelCatalog& catalog) {
    const fs::path snapshots = repo_dir / "snapshots";
    std::error_code ec;
    if (!fs::is_directory(snapshots, ec)) return;
    std::vector<fs::path> revisions;
    const std::string main = main_revision(repo_dir, catalog);
    if (!main.empty() && fs::is_directory(snapshots / main, ec)) {
        revisions.push_back(snapshots / main);
    } else {
        for (const auto& d : fs::directory_iterator(snapshots, ec)) revisions.push_back(d.path());
        std::sort(revisions.begin(), revisions.end());
    }
    std::vector<std::string> seen;  // a file in two snapshots is listed once
    for (const fs::path& rev : revisions) {
        for (const fs::path& rel : find_gguf_files(rev, kMaxFolderDepth)) {
            if (std::find(seen.begin(), seen.end(), rel.string()) != seen.end()) continue;
            seen.push_back(rel.string());
            const fs::path full = rev / rel;
            if (!inside(full, repo_dir)) {
                catalog.warnings.push_back(cat("Hugging Face cache ", full.string(),
                                               ": links outside its repository folder; skipped"));
                continue;
            }
            ModelEntry e;
            e.name = repo_model_name(repo, rel.filename().string());
            e.file = rel.filename().string();
            e.path = full.string();
            e.source = ModelSource::HfCache;
            add_model_file(catalog, std::move(e), "Hugging Face cache file (a missing blob?)");
        }
    }
}

}  // namespace

std::vector<fs::path> find_gguf_files(const fs::path& root, int max_depth) {
    std::vector<fs::path> out;
    std::error_code ec;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    size_t visited = 0;
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (++visited > kMaxVisited) break;
        if (it.depth() >= max_depth) it.disable_recursion_pending();
        const std::string name = it->path().filename().string();
        if (!name.empty() && name[0] == '.') {  // hidden files, partial downloads' temp names
            if (it->is_directory(ec)) it.disable_recursion_pending();
            continue;
        }
        // Later parts of a split model open with their first part.
        if (is_gguf_name(name) && split_part_of(name).index <= 1 && !it->is_directory(ec)) {
            out.push_back(it->path().lexically_relative(root));
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

void add_model_file(ModelCatalog& catalog, ModelEntry entry, std::string_view what) {
    std::error_code ec;
    const fs::file_status st = fs::status(entry.path, ec);
    if (ec || !fs::is_regular_file(st)) {
        catalog.warnings.push_back(cat(entry.name, ": ", what, " ", entry.path,
                                       ec ? " cannot be read (" + ec.message() + ")"
                                          : " is not a regular file", "; skipped"));
        return;
    }
    entry.size = fs::file_size(entry.path, ec);
    catalog.entries.push_back(std::move(entry));
}

std::string repo_model_name(std::string_view repo, std::string_view file_name) {
    const std::string tag = quant_tag_of(file_name);
    return cat(repo, ":", tag.empty() ? gguf_stem(file_name) : tag);
}

void scan_hf_cache(const ModelPlace& place, ModelCatalog& catalog) {
    std::error_code ec;
    for (const auto& d : fs::directory_iterator(place.path, ec)) {
        const std::string dir = d.path().filename().string();
        if (!dir.starts_with("models--") || !d.is_directory(ec)) continue;
        std::string repo = dir.substr(8);
        const size_t sep = repo.find("--");
        if (sep != std::string::npos) repo.replace(sep, 2, "/");  // models--user--repo
        scan_hf_repo(d.path(), repo, catalog);
    }
}

void scan_model_folder(const ModelPlace& place, ModelCatalog& catalog) {
    const fs::path root(place.path);
    for (const fs::path& rel : find_gguf_files(root, kMaxFolderDepth)) {
        std::vector<std::string> parts;
        for (const auto& p : rel) parts.push_back(p.string());
        const std::string file = parts.back();
        ModelEntry e;
        if (parts.size() == 1) {
            e.name = gguf_stem(file);
        } else {
            std::string repo = parts[0];
            if (parts.size() > 2) repo += "/" + parts[1];
            e.name = repo_model_name(repo, file);
        }
        e.file = file;
        e.path = (root / rel).string();
        e.source = place.source;
        add_model_file(catalog, std::move(e), "file");
    }
}

}  // namespace strata::hub_detail
