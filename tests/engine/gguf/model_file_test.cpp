// ModelFile: single files and split models (NAME-0000i-of-0000N.gguf), the split-key checks,
// and the typed getters (any integer type for get_int, errors naming key and type).
#include <gtest/gtest.h>

#include "engine/gguf/model_file.h"
#include "gguf_test_util.h"

namespace strata {
namespace {

struct ShardSpec {
    std::vector<std::pair<std::string, GgufValue>> kvs;
    std::vector<std::string> tensors;  // F32 [8, 2] each
};

void write_shard(const std::string& path, const ShardSpec& spec) {
    GgufWriter w(path);
    for (const auto& [k, v] : spec.kvs)
        w.set(k, v);
    for (const std::string& t : spec.tensors)
        w.add_tensor(t, GgmlType::F32, {8, 2});
    w.write_header();
    for (size_t i = 0; i < spec.tensors.size(); ++i) {
        const auto d = test::pattern_bytes(64, static_cast<uint32_t>(spec.tensors[i].size() + i));
        w.write_tensor_data(d.data(), d.size());
    }
    w.finish();
}

// Three shards of "m": 2 + 1 + 2 tensors. `edit` may change a shard's spec before writing.
std::string write_split(const test::TempDir& dir,
                        const std::function<void(int, ShardSpec&)>& edit = nullptr) {
    const std::vector<std::vector<std::string>> names = {
        {"token_embd.weight", "blk.0.attn_q.weight"},
        {"blk.0.ffn_up.weight"},
        {"blk.1.attn_q.weight", "output_norm.weight"}};
    for (int i = 0; i < 3; ++i) {
        ShardSpec s;
        if (i == 0) s.kvs.emplace_back("general.architecture", GgufValue::string("llama"));
        s.kvs.emplace_back("split.no", GgufValue::u16(static_cast<uint16_t>(i)));
        s.kvs.emplace_back("split.count", GgufValue::u16(3));
        s.kvs.emplace_back("split.tensors.count", GgufValue::i32(5));
        s.tensors = names[i];
        if (edit) edit(i, s);
        write_shard(dir.file("m-0000" + std::to_string(i + 1) + "-of-00003.gguf"), s);
    }
    return dir.file("m-00002-of-00003.gguf");
}

void set_kv(ShardSpec& s, const std::string& key, GgufValue v) {
    for (auto& kv : s.kvs) {
        if (kv.first == key) kv.second = std::move(v);
    }
}

std::string error_of(const std::string& path) {
    try {
        ModelFile m(path);
    } catch (const FormatError& e) {
        return e.what();
    }
    return "<no FormatError>";
}

TEST(ModelFile, OpensAllShardsFromAnyShardName) {
    test::TempDir dir;
    const std::string second = write_split(dir);
    for (const std::string& p :
         {second, dir.file("m-00001-of-00003.gguf"), dir.file("m-00003-of-00003.gguf")}) {
        const ModelFile m(p);
        EXPECT_EQ(m.n_shards(), 3);
        ASSERT_EQ(m.tensors().size(), 5u);
        EXPECT_EQ(m.architecture(), "llama");
        EXPECT_EQ(m.tensor("blk.0.ffn_up.weight").shard, 1);
        EXPECT_EQ(m.tensor("output_norm.weight").shard, 2);
        EXPECT_EQ(m.tensors()[4].name, "output_norm.weight");
        const TensorInfo& t = m.tensor("blk.1.attn_q.weight");
        EXPECT_EQ(t.data, m.shard(2).bytes() + t.file_offset);
        EXPECT_EQ(m.total_tensor_bytes(), 5u * 64u);
        EXPECT_EQ(m.shard(0).path(), dir.file("m-00001-of-00003.gguf"));
    }
}

TEST(ModelFile, MissingShard) {
    test::TempDir dir;
    const std::string p = write_split(dir);
    std::filesystem::remove(dir.file("m-00003-of-00003.gguf"));
    const std::string msg = error_of(p);
    EXPECT_NE(msg.find("shard 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("m-00003-of-00003.gguf' is missing"), std::string::npos) << msg;
}

TEST(ModelFile, WrongSplitCount) {
    test::TempDir dir;
    const std::string p = write_split(dir, [](int i, ShardSpec& s) {
        if (i == 1) set_kv(s, "split.count", GgufValue::u16(4));
    });
    const std::string msg = error_of(p);
    EXPECT_NE(msg.find("m-00002-of-00003.gguf: split.count = 4"), std::string::npos) << msg;
}

TEST(ModelFile, WrongSplitNo) {
    test::TempDir dir;
    const std::string p = write_split(dir, [](int i, ShardSpec& s) {
        if (i == 2) set_kv(s, "split.no", GgufValue::u16(1));
    });
    const std::string msg = error_of(p);
    EXPECT_NE(msg.find("split.no = 1 but this is shard 3"), std::string::npos) << msg;
}

TEST(ModelFile, WrongTotalTensorCount) {
    test::TempDir dir;
    const std::string p = write_split(dir, [](int i, ShardSpec& s) {
        if (i == 0) set_kv(s, "split.tensors.count", GgufValue::i32(6));
    });
    const std::string msg = error_of(p);
    EXPECT_NE(msg.find("split.tensors.count = 6"), std::string::npos) << msg;
    EXPECT_NE(msg.find("hold 5 tensors"), std::string::npos) << msg;
}

TEST(ModelFile, MissingSplitKey) {
    test::TempDir dir;
    const std::string p = write_split(dir, [](int i, ShardSpec& s) {
        if (i == 1) s.kvs.erase(s.kvs.begin());  // drops split.no
    });
    EXPECT_NE(error_of(p).find("lacks the key 'split.no'"), std::string::npos) << error_of(p);
}

TEST(ModelFile, DuplicateTensorAcrossShards) {
    test::TempDir dir;
    const std::string p = write_split(dir, [](int i, ShardSpec& s) {
        if (i == 2) s.tensors[0] = "blk.0.attn_q.weight";
    });
    const std::string msg = error_of(p);
    EXPECT_NE(msg.find("tensor 'blk.0.attn_q.weight' appears in shard 1"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("shard 3"), std::string::npos) << msg;
}

TEST(ModelFile, ShardOfSplitModelUnderAPlainName) {
    test::TempDir dir;
    write_split(dir);
    std::filesystem::rename(dir.file("m-00001-of-00003.gguf"), dir.file("m.gguf"));
    EXPECT_NE(error_of(dir.file("m.gguf")).find("split.count = 3"), std::string::npos);
}

TEST(ModelFile, ShardNumberOutOfRange) {
    test::TempDir dir;
    write_split(dir);
    EXPECT_NE(error_of(dir.file("m-00000-of-00003.gguf")).find("out of range"), std::string::npos);
    EXPECT_NE(error_of(dir.file("m-00004-of-00003.gguf")).find("out of range"), std::string::npos);
}

TEST(ModelFile, NonexistentFileIsSystemError) {
    EXPECT_THROW(ModelFile("/nonexistent/model.gguf"), SystemError);
    test::TempDir dir;
    EXPECT_THROW(GgufFile(dir.file("")), SystemError);  // a directory
}

TEST(ModelFile, TypedGetters) {
    test::TempDir dir;
    const std::string path = dir.file("model.gguf");
    write_shard(path, {{{"general.architecture", GgufValue::string("llama")},
                        {"llama.block_count", GgufValue::u32(18)},
                        {"llama.context_length", GgufValue::u64(32768)},
                        {"llama.i8", GgufValue::i8(-3)},
                        {"llama.u16", GgufValue::u16(7)},
                        {"llama.huge", GgufValue::u64(~0ULL)},
                        {"llama.eps", GgufValue::f32(1e-6f)},
                        {"llama.theta", GgufValue::f64(1e6)},
                        {"llama.name", GgufValue::string("x")},
                        {"llama.causal", GgufValue::boolean(false)}},
                       {"t"}});
    const ModelFile m(path);
    EXPECT_EQ(m.get_int("llama.block_count"), 18);
    EXPECT_EQ(m.get_int("llama.context_length"), 32768);
    EXPECT_EQ(m.get_int("llama.i8"), -3);
    EXPECT_EQ(m.find_int("llama.u16"), 7);
    EXPECT_EQ(m.find_int("llama.absent"), std::nullopt);
    EXPECT_FLOAT_EQ(static_cast<float>(m.get_float("llama.eps")), 1e-6f);
    EXPECT_EQ(m.find_float("llama.theta"), 1e6);
    EXPECT_EQ(m.find_float("llama.absent"), std::nullopt);
    EXPECT_EQ(m.get_string("llama.name"), "x");
    EXPECT_EQ(m.find_string("llama.name"), "x");
    EXPECT_EQ(m.find_string("llama.absent"), std::nullopt);
    EXPECT_EQ(m.find_bool("llama.causal"), false);
    EXPECT_EQ(m.find_bool("llama.absent"), std::nullopt);
    EXPECT_NE(m.find("llama.eps"), nullptr);

    const auto msg = [&](const std::function<void()>& f) -> std::string {
        try {
            f();
        } catch (const FormatError& e) {
            return e.what();
        }
        return "<no FormatError>";
    };
    EXPECT_EQ(msg([&] { m.get_int("llama.name"); }),
              path + ": key 'llama.name' has type string, expected an integer");
    EXPECT_NE(msg([&] { m.get_int("llama.huge"); }).find("18446744073709551615"),
              std::string::npos);
    EXPECT_EQ(msg([&] { m.get_int("llama.block_count_x"); }),
              path + ": missing key 'llama.block_count_x'");
    EXPECT_NE(msg([&] { m.find_float("llama.name"); }).find("expected a float"), std::string::npos);
    EXPECT_NE(msg([&] { m.find_bool("llama.u16"); }).find("type u16, expected bool"),
              std::string::npos);
    EXPECT_NE(msg([&] { m.get_string("llama.u16"); }).find("expected string"), std::string::npos);
    EXPECT_NE(msg([&] { m.tensor("nope"); }).find("missing tensor 'nope'"), std::string::npos);
    EXPECT_EQ(m.find_tensor("nope"), nullptr);
    EXPECT_EQ(m.find_tensor("t"), &m.tensors()[0]);
}

}  // namespace
}  // namespace strata
