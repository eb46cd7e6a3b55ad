// The parts of `strata pull` that need no network: reading owner/repo[:QUANT] and choosing the
// file of a repository's list. The download itself runs against a local server in
// tests/tools/pull_cli_test.py.
#include "engine/hub/hf_pull.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"

namespace strata {
namespace {

TEST(HfRef, ParsesOwnerRepoAndQuant) {
    const HfRef a = parse_hf_ref("Qwen/Qwen2.5-0.5B-Instruct-GGUF:q4_k_m");
    EXPECT_EQ(a.repo, "Qwen/Qwen2.5-0.5B-Instruct-GGUF");
    EXPECT_EQ(a.quant, "q4_k_m");
    const HfRef b = parse_hf_ref("bartowski/Llama-3.2-1B-Instruct-GGUF");
    EXPECT_EQ(b.quant, "");
    for (const char* bad : {"norepo", "a/b/c", "../etc:Q4", "a/..", "a/b:", "a/b:../x", "/b", "a/ b", ""}) {
        EXPECT_THROW(parse_hf_ref(bad), ArgumentError) << bad;
    }
}

std::vector<HfFile> repo_files() {
    return {{"README.md", 10},
            {"model-Q4_K_M.gguf", 100},
            {"model-Q8_0.gguf", 200},
            {"mmproj-model-Q8_0.gguf", 5},
            {"big/model-Q6_K-00001-of-00002.gguf", 50},
            {"big/model-Q6_K-00002-of-00002.gguf", 50}};
}

TEST(HfChoose, QuantDefaultAndSplits) {
    const std::vector<HfFile> files = repo_files();
    EXPECT_EQ(choose_hf_file(parse_hf_ref("o/r:q8_0"), files).path, "model-Q8_0.gguf");  // not the mmproj
    EXPECT_EQ(choose_hf_file(parse_hf_ref("o/r"), files).path, "model-Q4_K_M.gguf");      // default Q4_K_M
    EXPECT_EQ(choose_hf_file(parse_hf_ref("o/r:Q6_K"), files).path, "big/model-Q6_K-00001-of-00002.gguf");
    const std::vector<HfFile> one = {{"only-F16.gguf", 3}, {"mmproj-F16.gguf", 1}};
    EXPECT_EQ(choose_hf_file(parse_hf_ref("o/r"), one).path, "only-F16.gguf");  // the only model
}

TEST(HfChoose, NoMatchingQuantListsTheGgufFiles) {
    try {
        choose_hf_file(parse_hf_ref("o/r:IQ2_XS"), repo_files());
        FAIL() << "no IQ2_XS file";
    } catch (const ArgumentError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("o/r has no GGUF file of type IQ2_XS"), std::string::npos) << m;
        EXPECT_NE(m.find("model-Q4_K_M.gguf, model-Q8_0.gguf"), std::string::npos) << m;
        EXPECT_EQ(m.find("README"), std::string::npos) << m;
    }
    EXPECT_THROW(choose_hf_file(parse_hf_ref("o/r"), {{"README.md", 1}}), ArgumentError);
}

}  // namespace
}  // namespace strata
