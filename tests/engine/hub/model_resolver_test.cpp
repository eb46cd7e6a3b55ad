// Name resolution: the rules in order (exact, owner left out, prefix), ambiguity and no match
// with the lists a user needs.
#include "engine/hub/model_resolver.h"

#include <gtest/gtest.h>

#include "tests/engine/hub/store_fixture.h"

namespace strata {
namespace {
using testing::StoreFixture;

class Resolver : public ::testing::Test {
  protected:
    void SetUp() override {
        s.add_hf_file("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf", "qwen2");
        s.add_hf_file("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q8_0.gguf", "qwen2");
        s.add_ollama_model("qwen2.5-coder", "latest", "qwen2");
        s.add_ollama_model("qwen2.5-coder", "7b", "qwen2");
        s.add_ollama_model("gemma3", "270m", "gemma3");
        StoreFixture::write_gguf(s.strata() / "tiny-llama-Q4_0.gguf", "llama", 2);
        catalog = scan_models(s.places());
    }
    std::string path_of(const std::string& name) { return find_model(catalog, name).path; }
    std::string name_of(const std::string& name) { return find_model(catalog, name).name; }

    StoreFixture s;
    ModelCatalog catalog;
};

TEST_F(Resolver, ExactNamesFileNamesAndStems) {
    EXPECT_EQ(name_of("Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M"), "Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M");
    EXPECT_EQ(name_of("qwen/qwen2.5-0.5b-instruct-gguf:q8_0"), "Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0");
    EXPECT_EQ(name_of("qwen2.5-0.5b-instruct-q8_0.gguf"), "Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0");
    EXPECT_EQ(name_of("tiny-llama-Q4_0"), "tiny-llama-Q4_0");
    EXPECT_EQ(path_of("tiny-llama-Q4_0"), (s.strata() / "tiny-llama-Q4_0.gguf").string());
    // Ollama's default tag: the bare name is name:latest, though "qwen2.5-coder:7b" shares the prefix.
    EXPECT_EQ(name_of("qwen2.5-coder"), "qwen2.5-coder:latest");
    EXPECT_EQ(name_of("qwen2.5-coder:7b"), "qwen2.5-coder:7b");
}

TEST_F(Resolver, OwnerLeftOutAndUniquePrefix) {
    EXPECT_EQ(name_of("Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M"), "Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M");
    EXPECT_EQ(name_of("gemma3"), "gemma3:270m");
    EXPECT_EQ(name_of("tiny"), "tiny-llama-Q4_0");
}

TEST_F(Resolver, PrefixWithTheFileNamesQuant) {
    EXPECT_EQ(name_of("tiny-llama:q4_0"), "tiny-llama-Q4_0");
    EXPECT_EQ(name_of("Qwen2.5-0.5B-Instruct:Q8_0"), "Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0");
    EXPECT_THROW(find_model(catalog, "tiny-llama:Q8_0"), ModelNameError);  // no such quant
    EXPECT_THROW(find_model(catalog, "tiny-llama:"), ModelNameError);
}

TEST_F(Resolver, AmbiguousNamesListTheCandidates) {
    try {
        find_model(catalog, "Qwen/Qwen2.5-0.5B-Instruct-GGUF");
        FAIL() << "two quants must be ambiguous";
    } catch (const ModelNameError& e) {
        EXPECT_NE(std::string(e.what()).find("matches 2 models"), std::string::npos) << e.what();
        EXPECT_NE(e.details().find("Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M"), std::string::npos);
        EXPECT_NE(e.details().find("Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0"), std::string::npos);
    }
}

TEST_F(Resolver, NoMatchListsModelsAndPlaces) {
    try {
        find_model(catalog, "llama-70b");
        FAIL() << "no model has this name";
    } catch (const ModelNameError& e) {
        EXPECT_NE(std::string(e.what()).find("'llama-70b'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("6 models found"), std::string::npos) << e.what();
        for (const ModelEntry& m : catalog.entries) EXPECT_NE(e.details().find(m.name), std::string::npos) << m.name;
        for (const ModelPlace& p : catalog.places) EXPECT_NE(e.details().find(p.path), std::string::npos) << p.path;
        EXPECT_NE(e.details().find("(ollama, test): 3 models"), std::string::npos) << e.details();
    }
    EXPECT_THROW(find_model(catalog, ""), ModelNameError);
}

TEST_F(Resolver, TheSameFileInTwoStoresIsOneModel) {
    std::filesystem::create_directories(s.lmstudio());
    std::filesystem::create_symlink(s.strata() / "tiny-llama-Q4_0.gguf", s.lmstudio() / "tiny-llama-Q4_0.gguf");
    const ModelCatalog c = scan_models(s.places());
    EXPECT_EQ(find_model(c, "tiny-llama-Q4_0").name, "tiny-llama-Q4_0");
}

TEST(ResolverPaths, ExistingPathsAreNotNames) {
    EXPECT_TRUE(is_existing_path("/"));
    EXPECT_FALSE(is_existing_path("/nonexistent/strata/model.gguf"));
}

}  // namespace
}  // namespace strata
