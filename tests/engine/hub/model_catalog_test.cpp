// The model catalog over fake stores: the names each store's layout gives, the header facts,
// and hostile Ollama manifests and broken cache links as per-entry warnings, never a throw.
#include "engine/hub/model_catalog.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/engine/hub/store_fixture.h"

namespace strata {
namespace {
namespace fs = std::filesystem;
using testing::StoreFixture;

const ModelEntry* by_name(const ModelCatalog& c, const std::string& name) {
    for (const ModelEntry& e : c.entries) {
        if (e.name == name) return &e;
    }
    return nullptr;
}

bool warned(const ModelCatalog& c, const std::string& fragment) {
    return std::any_of(c.warnings.begin(), c.warnings.end(),
                       [&](const std::string& w) { return w.find(fragment) != std::string::npos; });
}

TEST(ModelCatalog, NamesFromEachStoreLayout) {
    StoreFixture s;
    s.add_hf_file("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf", "qwen2");
    s.add_hf_file("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "sub/qwen2.5-0.5b-instruct-q8_0.gguf", "qwen2");
    const fs::path blob = s.add_ollama_model("qwen2.5-coder", "0.5b", "qwen2");
    const uint64_t lm_size = StoreFixture::write_gguf(s.lmstudio() / "lmstudio-community" / "Llama-3.2-1B-GGUF" /
                                                          "Llama-3.2-1B-Instruct-Q6_K.gguf", "llama", 18);
    StoreFixture::write_gguf(s.strata() / "my-model.gguf", "gemma3", 1);
    StoreFixture::write_text(s.strata() / "notes.txt", "not a model");

    CatalogOptions options;
    options.read_headers = true;
    const ModelCatalog c = scan_models(s.places(), options);
    ASSERT_EQ(c.entries.size(), 5u) << (c.warnings.empty() ? "" : c.warnings.front());
    EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();

    const ModelEntry* hf = by_name(c, "Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M");
    ASSERT_NE(hf, nullptr);
    EXPECT_EQ(hf->source, ModelSource::HfCache);
    EXPECT_EQ(hf->arch, "qwen2");
    EXPECT_EQ(hf->quant, "Q4_K_M");  // general.file_type 15
    ASSERT_NE(by_name(c, "Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0"), nullptr);  // in a subfolder

    const ModelEntry* ol = by_name(c, "qwen2.5-coder:0.5b");
    ASSERT_NE(ol, nullptr);
    EXPECT_EQ(ol->path, blob.string());
    EXPECT_EQ(ol->quant, "Q8_0");  // file_type 7
    EXPECT_EQ(ol->size, fs::file_size(blob));

    const ModelEntry* lm = by_name(c, "lmstudio-community/Llama-3.2-1B-GGUF:Q6_K");
    ASSERT_NE(lm, nullptr);
    EXPECT_EQ(lm->size, lm_size);
    EXPECT_EQ(lm->source, ModelSource::LmStudio);
    EXPECT_EQ(lm->arch, "llama");

    const ModelEntry* own = by_name(c, "my-model");
    ASSERT_NE(own, nullptr);
    EXPECT_EQ(own->quant, "F16");
    EXPECT_TRUE(std::is_sorted(c.entries.begin(), c.entries.end(),
                               [](const ModelEntry& a, const ModelEntry& b) { return a.name < b.name; }));
}

TEST(ModelCatalog, HostileOllamaManifestsAreWarningsPerEntry) {
    StoreFixture s;
    s.add_ollama_model("good", "latest", "llama");
    s.add_ollama_manifest("badjson", "latest", "{\"layers\": [");
    s.add_ollama_manifest("nolayers", "latest", "{\"schemaVersion\": 2}");
    s.add_ollama_manifest("escape", "latest",
                          "{\"layers\":[{\"mediaType\":\"application/vnd.ollama.image.model\","
                          "\"digest\":\"sha256:../../../../etc/passwd\"}]}");
    s.add_ollama_manifest("missing", "latest",
                          "{\"layers\":[{\"mediaType\":\"application/vnd.ollama.image.model\","
                          "\"digest\":\"sha256:" + std::string(64, 'a') + "\"}]}");
    s.add_ollama_manifest("deep", "latest", std::string(10000, '[') + std::string(10000, ']'));
    s.add_ollama_manifest("notobject", "latest", "[1, 2]");
    s.add_ollama_manifest("digestnumber", "latest",
                          "{\"layers\":[{\"mediaType\":\"application/vnd.ollama.image.model\",\"digest\":7}]}");

    const ModelCatalog c = scan_models(s.places(), CatalogOptions{true});
    ASSERT_EQ(c.entries.size(), 1u);
    EXPECT_EQ(c.entries[0].name, "good:latest");
    EXPECT_EQ(c.warnings.size(), 7u);
    EXPECT_TRUE(warned(c, "badjson:latest: Ollama manifest"));
    EXPECT_TRUE(warned(c, "nolayers:latest")) ;
    EXPECT_TRUE(warned(c, "is not \"sha256:\" and 64 hex digits"));
    EXPECT_TRUE(warned(c, "missing:latest: Ollama blob"));
    EXPECT_TRUE(warned(c, "deep:latest"));
    EXPECT_TRUE(warned(c, "notobject:latest"));
    EXPECT_TRUE(warned(c, "digestnumber:latest"));
}

TEST(ModelCatalog, BrokenFilesAreWarnedAndSkippedOrListedWithoutHeader) {
    StoreFixture s;
    s.add_hf_file("o/r", "r-Q4_K_M.gguf", "llama");
    // A snapshot link whose blob is gone, and one that leaves the repository folder.
    const fs::path snap = s.hf() / "models--o--r" / "snapshots" / "abc123";
    fs::create_symlink("../../blobs/gone", snap / "r-Q8_0.gguf");
    StoreFixture::write_gguf(s.root() / "outside.gguf", "llama", 15);
    fs::create_symlink(s.root() / "outside.gguf", snap / "r-F16.gguf");
    // Not GGUF inside: listed (a name is cheap) but warned when headers are read.
    StoreFixture::write_text(s.strata() / "garbage.gguf", "this is not a GGUF file at all, just text");
    // A later part of a split model is not a model of its own.
    StoreFixture::write_gguf(s.strata() / "big-Q4_K_M-00001-of-00002.gguf", "llama", 15);
    StoreFixture::write_gguf(s.strata() / "big-Q4_K_M-00002-of-00002.gguf", "llama", 15);

    const ModelCatalog c = scan_models(s.places(), CatalogOptions{true});
    EXPECT_NE(by_name(c, "o/r:Q4_K_M"), nullptr);
    EXPECT_EQ(by_name(c, "o/r:Q8_0"), nullptr);
    EXPECT_EQ(by_name(c, "o/r:F16"), nullptr);
    EXPECT_TRUE(warned(c, "o/r:Q8_0: Hugging Face cache file"));
    EXPECT_TRUE(warned(c, "links outside its repository folder"));
    const ModelEntry* g = by_name(c, "garbage");
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->arch, "");
    EXPECT_TRUE(warned(c, "garbage: "));
    EXPECT_NE(by_name(c, "big-Q4_K_M-00001-of-00002"), nullptr);
    EXPECT_EQ(by_name(c, "big-Q4_K_M-00002-of-00002"), nullptr);
}

TEST(ModelCatalog, MissingPlacesAreEmptyNotErrors) {
    const std::vector<ModelPlace> places = {{ModelSource::HfCache, "/nonexistent/strata/hf", "test"},
                                            {ModelSource::Ollama, "/dev/null", "test"}};
    const ModelCatalog c = scan_models(places);
    EXPECT_TRUE(c.entries.empty());
    EXPECT_TRUE(c.warnings.empty());
    EXPECT_EQ(c.places.size(), 2u);
}

TEST(ModelCatalog, PlacesFollowTheEnvironment) {
    setenv("HF_HUB_CACHE", "/x/hub", 1);
    setenv("OLLAMA_MODELS", "/x/ollama", 1);
    setenv("STRATA_MODELS", "/x/strata", 1);
    const std::vector<ModelPlace> p = model_places_from_env();
    unsetenv("HF_HUB_CACHE");
    unsetenv("OLLAMA_MODELS");
    unsetenv("STRATA_MODELS");
    ASSERT_EQ(p.size(), 5u);
    EXPECT_EQ(p[0].path, "/x/hub");
    EXPECT_EQ(p[0].origin, "HF_HUB_CACHE");
    EXPECT_EQ(p[1].path, "/x/ollama");
    EXPECT_EQ(p[4].path, "/x/strata");
    setenv("HF_HOME", "/y", 1);
    const std::vector<ModelPlace> q = model_places_from_env();
    unsetenv("HF_HOME");
    EXPECT_EQ(q[0].path, "/y/hub");
}

}  // namespace
}  // namespace strata
