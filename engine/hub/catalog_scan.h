// Inside the model catalog: one scanner per kind of store, and the helpers they share. Each
// scanner adds entries and warnings to the catalog and never throws for what it finds on disk.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/hub/model_catalog.h"

namespace strata::hub_detail {

// models--user--repo/snapshots/<revision>/**.gguf
void scan_hf_cache(const ModelPlace& place, ModelCatalog& catalog);
// manifests/<host>/<namespace>/<model>/<tag> naming blobs/sha256-<hex>
void scan_ollama(const ModelPlace& place, ModelCatalog& catalog);
// LM Studio and Strata: loose *.gguf files and publisher/repo/*.gguf
void scan_model_folder(const ModelPlace& place, ModelCatalog& catalog);

// GGUF files under `root`, at most `max_depth` folders below it, as paths relative to `root`,
// sorted. Folder symbolic links are not followed; unreadable folders are skipped.
std::vector<std::filesystem::path> find_gguf_files(const std::filesystem::path& root, int max_depth);

// Adds `entry` when entry.path is a regular file (its size filled in); otherwise a warning
// naming `what` (the entry's origin) and the path.
void add_model_file(ModelCatalog& catalog, ModelEntry entry, std::string_view what);

// "user/repo:TAG" for a file of a repository: its quantization tag, or its stem without one.
std::string repo_model_name(std::string_view repo, std::string_view file_name);

}  // namespace strata::hub_detail
