// Fake model stores for the hub tests (see store_fixture.h).
#include "tests/engine/hub/store_fixture.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "engine/gguf/gguf_writer.h"

namespace strata::testing {
namespace fs = std::filesystem;

StoreFixture::StoreFixture() {
    std::random_device rd;
    root_ = fs::temp_directory_path() / ("strata_hub_test_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    fs::create_directories(root_);
}

StoreFixture::~StoreFixture() {
    std::error_code ec;
    fs::remove_all(root_, ec);
}

std::vector<ModelPlace> StoreFixture::places() const {
    return {{ModelSource::HfCache, hf().string(), "test"},
            {ModelSource::Ollama, ollama().string(), "test"},
            {ModelSource::LmStudio, lmstudio().string(), "test"},
            {ModelSource::Strata, strata().string(), "test"}};
}

uint64_t StoreFixture::write_gguf(const fs::path& path, const std::string& arch, int64_t file_type) {
    fs::create_directories(path.parent_path());
    std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(path.string())));
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> w(64 + rng() % 64);
    for (float& x : w) x = dist(rng);
    GgufWriter writer(path.string());
    writer.set("general.architecture", GgufValue::string(arch));
    writer.set("general.file_type", GgufValue::u32(static_cast<uint32_t>(file_type)));
    writer.add_tensor("token_embd.weight", GgmlType::F32, {static_cast<int64_t>(w.size())});
    writer.write_header();
    writer.write_tensor_data(w.data(), w.size() * sizeof(float));
    writer.finish();
    return fs::file_size(path);
}

void StoreFixture::write_text(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

void StoreFixture::add_hf_file(const std::string& owner_repo, const std::string& file, const std::string& arch) {
    std::string dir = "models--" + owner_repo;
    dir.replace(dir.find('/'), 1, "--");
    const fs::path repo = hf() / dir;
    const std::string blob = "blob" + std::to_string(++counter_);
    write_gguf(repo / "blobs" / blob, arch, 15);
    const fs::path link = repo / "snapshots" / "abc123" / file;
    fs::create_directories(link.parent_path());
    fs::path up = "../../blobs";
    for (size_t i = 0; i < static_cast<size_t>(std::count(file.begin(), file.end(), '/')); ++i) up = ".." / up;
    fs::create_symlink(up / blob, link);
    write_text(repo / "refs" / "main", "abc123");
}

fs::path StoreFixture::add_ollama_model(const std::string& model, const std::string& tag, const std::string& arch) {
    std::string hex;
    std::mt19937 rng(static_cast<uint32_t>(++counter_));
    for (int i = 0; i < 64; ++i) hex += "0123456789abcdef"[rng() % 16];
    const fs::path blob = ollama() / "blobs" / ("sha256-" + hex);
    const uint64_t size = write_gguf(blob, arch, 7);
    add_ollama_manifest(model, tag,
                        "{\"schemaVersion\":2,\"layers\":[{\"mediaType\":\"application/vnd.ollama.image.template\","
                        "\"digest\":\"sha256:" + std::string(64, '0') + "\",\"size\":10},"
                        "{\"mediaType\":\"application/vnd.ollama.image.model\",\"digest\":\"sha256:" + hex +
                        "\",\"size\":" + std::to_string(size) + "}]}");
    return blob;
}

void StoreFixture::add_ollama_manifest(const std::string& model, const std::string& tag, const std::string& json) {
    write_text(ollama() / "manifests" / "registry.ollama.ai" / "library" / model / tag, json);
}

}  // namespace strata::testing
