// Fake model stores in a temporary folder for the hub tests: tiny GGUF files (random F32
// weights, an architecture and a file type) laid out as each store keeps them.
#pragma once

#include <filesystem>
#include <string>

#include "engine/hub/model_catalog.h"

namespace strata::testing {

class StoreFixture {
  public:
    StoreFixture();
    ~StoreFixture();

    const std::filesystem::path& root() const { return root_; }
    std::filesystem::path hf() const { return root_ / "hf"; }
    std::filesystem::path ollama() const { return root_ / "ollama"; }
    std::filesystem::path lmstudio() const { return root_ / "lmstudio"; }
    std::filesystem::path strata() const { return root_ / "strata"; }
    std::vector<ModelPlace> places() const;

    // A small valid GGUF at `path` (folders created); returns its size.
    static uint64_t write_gguf(const std::filesystem::path& path, const std::string& arch, int64_t file_type);
    static void write_text(const std::filesystem::path& path, const std::string& text);

    // models--owner--repo/snapshots/<rev>/<file> linked to blobs/<hash>, refs/main = rev.
    void add_hf_file(const std::string& owner_repo, const std::string& file, const std::string& arch);
    // manifests/registry.ollama.ai/library/<model>/<tag> and its blob; returns the blob path.
    std::filesystem::path add_ollama_model(const std::string& model, const std::string& tag, const std::string& arch);
    void add_ollama_manifest(const std::string& model, const std::string& tag, const std::string& json);

  private:
    std::filesystem::path root_;
    int counter_ = 0;
};

}  // namespace strata::testing
