// GgufWriter -> GgufFile / ModelFile round trips: every value type, arrays, alignments 32 and 64,
// many tensors written in chunks that span tensors; values and data bytes must come back exactly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/gguf/model_file.h"
#include "gguf_test_util.h"

namespace strata {
namespace {

using test::pattern_bytes;

void expect_same(const GgufValue& a, const GgufValue& b, const std::string& key) {
    SCOPED_TRACE(key);
    ASSERT_EQ(a.type(), b.type());
    EXPECT_EQ(a.packed(), b.packed());
    if (a.type() == GgufType::STRING) {
        EXPECT_EQ(a.as_string(key), b.as_string(key));
    }
    if (a.is_array()) {
        EXPECT_EQ(a.array_type(), b.array_type());
        EXPECT_EQ(a.array_size(), b.array_size());
        if (a.array_type() == GgufType::STRING) {
            EXPECT_EQ(a.as_strings(key), b.as_strings(key));
        }
    }
}

std::vector<std::pair<std::string, GgufValue>> every_value_type() {
    std::vector<uint8_t> i16s = {0x01, 0x80, 0xFF, 0x7F};  // -32767, 32767
    std::vector<uint8_t> u64s(16);
    for (size_t i = 0; i < u64s.size(); ++i)
        u64s[i] = static_cast<uint8_t>(0xF0 + i);
    return {
        {"general.architecture", GgufValue::string("llama")},
        {"t.u8", GgufValue::u8(200)},
        {"t.i8", GgufValue::i8(-100)},
        {"t.u16", GgufValue::u16(60000)},
        {"t.i16", GgufValue::i16(-30000)},
        {"t.u32", GgufValue::u32(4000000000u)},
        {"t.i32", GgufValue::i32(-2000000000)},
        {"t.f32", GgufValue::f32(-1.5e-7f)},
        {"t.bool", GgufValue::boolean(true)},
        {"t.string", GgufValue::string("h\xC3\xA9llo\n\"world\"")},
        {"t.empty_string", GgufValue::string("")},
        {"t.u64", GgufValue::u64(~0ULL)},
        {"t.i64", GgufValue::i64(-(int64_t{1} << 62))},
        {"t.f64", GgufValue::f64(3.141592653589793)},
        {"t.strings", GgufValue::strings({"<pad>", "", "\xE2\x96\x81the", "x"})},
        {"t.empty_strings", GgufValue::strings({})},
        {"t.f32s", GgufValue::f32s({0.25f, -1e30f, 7.0f})},
        {"t.i32s", GgufValue::i32s({-1, 0, 2147483647})},
        {"t.empty_i32s", GgufValue::i32s({})},
        {"t.bools", GgufValue::bools({true, false, false, true})},
        {"t.u8s", GgufValue::scalar_array(GgufType::UINT8, {1, 2, 255}, 3)},
        {"t.i16s", GgufValue::scalar_array(GgufType::INT16, i16s, 2)},
        {"t.u64s", GgufValue::scalar_array(GgufType::UINT64, u64s, 2)},
        {"t.f64s", GgufValue::scalar_array(GgufType::FLOAT64, std::vector<uint8_t>(24, 0x3F), 3)},
    };
}

struct Spec {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    size_t n_bytes;
};

std::vector<Spec> few_tensors() {
    return {{"token_embd.weight", GgmlType::Q4_K, {256, 3}, 144 * 3},
            {"blk.0.attn_q.weight", GgmlType::Q4_0, {64, 2, 1, 2}, 18 * 2 * 2 * 2},
            {"blk.0.attn_norm.weight", GgmlType::F32, {5}, 20},
            {"output.weight", GgmlType::Q8_0, {32, 1, 3}, 34 * 3}};
}

// Writes the given metadata and tensors; data in chunks of `chunk` bytes across tensors.
void write_file(GgufWriter& w, const std::vector<std::pair<std::string, GgufValue>>& kvs,
                const std::vector<Spec>& tensors, size_t chunk) {
    for (const auto& [k, v] : kvs)
        w.set(k, v);
    std::vector<uint8_t> all;
    for (size_t i = 0; i < tensors.size(); ++i) {
        w.add_tensor(tensors[i].name, tensors[i].type, tensors[i].ne);
        const auto d = pattern_bytes(tensors[i].n_bytes, static_cast<uint32_t>(i));
        all.insert(all.end(), d.begin(), d.end());
    }
    w.write_header();
    for (size_t pos = 0; pos < all.size(); pos += chunk) {
        w.write_tensor_data(all.data() + pos, std::min(chunk, all.size() - pos));
    }
    w.finish();
}

void check_file(const GgufFile& f, const std::vector<std::pair<std::string, GgufValue>>& kvs,
                const std::vector<Spec>& tensors, uint32_t alignment) {
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), alignment);
    const size_t extra = alignment != 32 ? 1 : 0;  // the writer adds general.alignment
    ASSERT_EQ(f.metadata().size(), kvs.size() + extra);
    for (size_t i = 0; i < kvs.size(); ++i) {
        EXPECT_EQ(f.metadata()[i].first, kvs[i].first);
        expect_same(f.metadata()[i].second, kvs[i].second, kvs[i].first);
    }
    if (extra) {
        EXPECT_EQ(f.find("general.alignment")->as_int("a"), alignment);
    }
    EXPECT_EQ(f.data_offset() % alignment, 0u);
    ASSERT_EQ(f.tensors().size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& t = f.tensors()[i];
        SCOPED_TRACE(t.name);
        EXPECT_EQ(t.name, tensors[i].name);
        EXPECT_EQ(t.type, tensors[i].type);
        EXPECT_EQ(t.n_dims, static_cast<int>(tensors[i].ne.size()));
        for (size_t d = 0; d < 4; ++d) {
            EXPECT_EQ(t.ne[d], d < tensors[i].ne.size() ? tensors[i].ne[d] : 1);
        }
        EXPECT_EQ(t.n_bytes, tensors[i].n_bytes);
        EXPECT_EQ(t.offset % alignment, 0u);
        EXPECT_EQ(t.file_offset, f.data_offset() + t.offset);
        EXPECT_EQ(t.data, f.bytes() + t.file_offset);
        const auto want = pattern_bytes(t.n_bytes, static_cast<uint32_t>(i));
        EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.n_bytes), want);
        EXPECT_EQ(f.find_tensor(t.name), &t);
    }
    EXPECT_EQ(f.find_tensor("nope"), nullptr);
    EXPECT_EQ(f.find("nope"), nullptr);
}

class GgufRoundTrip : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GgufRoundTrip, InMemoryEveryValueType) {
    const uint32_t alignment = GetParam();
    std::ostringstream out;
    GgufWriter w(out, alignment);
    write_file(w, every_value_type(), few_tensors(), 7);
    const std::string bytes = out.str();
    EXPECT_EQ(w.total_bytes(), bytes.size());
    std::vector<uint8_t> storage;
    check_file(test::parse_exact(bytes, &storage), every_value_type(), few_tensors(), alignment);
}

TEST_P(GgufRoundTrip, TempFileThroughMmapAndModelFile) {
    const uint32_t alignment = GetParam();
    test::TempDir dir;
    const std::string path = dir.file("model.gguf");
    GgufWriter w(path, alignment);
    write_file(w, every_value_type(), few_tensors(), 1000);
    EXPECT_EQ(std::filesystem::file_size(path), w.total_bytes());
    check_file(GgufFile(path), every_value_type(), few_tensors(), alignment);

    const ModelFile m(path);
    EXPECT_EQ(m.n_shards(), 1);
    EXPECT_EQ(m.architecture(), "llama");
    EXPECT_EQ(m.tensors().size(), few_tensors().size());
    EXPECT_EQ(m.total_file_bytes(), w.total_bytes());
    uint64_t sum = 0;
    for (const Spec& s : few_tensors())
        sum += s.n_bytes;
    EXPECT_EQ(m.total_tensor_bytes(), sum);
}

// The file is mapped shared: a read-only long-term pin of a private mapping (--pin-weights,
// cudaHostRegister) makes Linux copy every page first. /proc/self/maps shows "r--s" for a
// shared read-only mapping, "r--p" for a private one.
TEST(GgufFileMapping, IsSharedAndReadOnly) {
    test::TempDir dir;
    const std::string path = dir.file("model.gguf");
    GgufWriter w(path, 32);
    write_file(w, every_value_type(), few_tensors(), 1000);
    const GgufFile f(path);
    const std::string canonical = std::filesystem::canonical(path).string();
    std::ifstream maps("/proc/self/maps");
    ASSERT_TRUE(maps.good());
    int found = 0;
    for (std::string line; std::getline(maps, line);) {
        if (line.size() < canonical.size() || line.compare(line.size() - canonical.size(), std::string::npos, canonical) != 0)
            continue;
        ++found;
        std::istringstream fields(line);
        std::string range, perms;
        fields >> range >> perms;
        EXPECT_EQ(perms, "r--s") << line;
    }
    EXPECT_EQ(found, 1) << "mappings of " << canonical;
}

TEST_P(GgufRoundTrip, ManyTensorsRandomChunks) {
    const uint32_t alignment = GetParam();
    std::mt19937 rng(alignment);
    const std::pair<GgmlType, std::pair<int, size_t>> types[] = {{GgmlType::F32, {1, 4}},
                                                                 {GgmlType::F16, {1, 2}},
                                                                 {GgmlType::Q4_0, {32, 18}},
                                                                 {GgmlType::Q8_0, {32, 34}},
                                                                 {GgmlType::Q6_K, {256, 210}}};
    std::vector<Spec> tensors;
    for (int i = 0; i < 300; ++i) {
        const auto& [type, bs] = types[rng() % 5];
        const int64_t ne0 = bs.first * (1 + rng() % 3), ne1 = 1 + rng() % 5;
        tensors.push_back({"blk." + std::to_string(i / 10) + ".t" + std::to_string(i),
                           type,
                           {ne0, ne1},
                           static_cast<size_t>(ne0 / bs.first * bs.second * ne1)});
    }
    std::vector<uint8_t> all;
    std::ostringstream out;
    GgufWriter w(out, alignment);
    w.set("general.architecture", GgufValue::string("test"));
    for (size_t i = 0; i < tensors.size(); ++i) {
        w.add_tensor(tensors[i].name, tensors[i].type, tensors[i].ne);
        const auto d = pattern_bytes(tensors[i].n_bytes, static_cast<uint32_t>(i));
        all.insert(all.end(), d.begin(), d.end());
    }
    w.write_header();
    for (size_t pos = 0; pos < all.size();) {
        const size_t n = std::min<size_t>(1 + rng() % 700, all.size() - pos);
        w.write_tensor_data(all.data() + pos, n);
        pos += n;
    }
    w.finish();
    std::vector<uint8_t> storage;
    const GgufFile f = test::parse_exact(out.str(), &storage);
    check_file(f, {{"general.architecture", GgufValue::string("test")}}, tensors, alignment);
}

INSTANTIATE_TEST_SUITE_P(Alignments, GgufRoundTrip, ::testing::Values(32u, 64u));

TEST(GgufWriter, NoTensorsMeansNoPadding) {
    std::ostringstream out;
    GgufWriter w(out);
    w.set("general.architecture", GgufValue::string("x"));
    w.finish();
    std::vector<uint8_t> storage;
    const GgufFile f = test::parse_exact(out.str(), &storage);
    EXPECT_EQ(f.data_offset(), out.str().size());
    EXPECT_TRUE(f.tensors().empty());
    EXPECT_EQ(w.total_bytes(), out.str().size());
}

TEST(GgufWriter, RejectsMisuse) {
    std::ostringstream out;
    EXPECT_THROW(GgufWriter(out, 48), ArgumentError);
    EXPECT_THROW(GgufWriter(out, 0), ArgumentError);
    EXPECT_THROW(GgufWriter("/nonexistent-dir/x.gguf"), SystemError);

    GgufWriter w(out, 64);
    w.set("a", GgufValue::u8(1));
    EXPECT_THROW(w.set("a", GgufValue::u8(2)), ArgumentError);
    EXPECT_THROW(w.set("", GgufValue::u8(2)), ArgumentError);
    EXPECT_THROW(w.set("general.alignment", GgufValue::u32(32)), ArgumentError);
    EXPECT_THROW(w.set("general.alignment", GgufValue::u64(64)), ArgumentError);
    w.set("general.alignment", GgufValue::u32(64));  // agrees with the writer: accepted once
    w.add_tensor("t", GgmlType::F32, {4});
    EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {4}), ArgumentError);
    EXPECT_THROW(w.add_tensor("q", GgmlType::Q4_K, {100}), ArgumentError);
    EXPECT_THROW(w.add_tensor("z", GgmlType::F32, {0}), ArgumentError);
    EXPECT_THROW(w.add_tensor("d", GgmlType::F32, {1, 1, 1, 1, 1}), ArgumentError);
    EXPECT_THROW(w.add_tensor(std::string(64, 'n'), GgmlType::F32, {4}), ArgumentError);
    EXPECT_THROW(w.add_tensor("bad", static_cast<GgmlType>(4), {4}), ArgumentError);
    EXPECT_THROW(w.write_tensor_data("x", 1), ArgumentError);  // before the header
    w.write_header();
    EXPECT_THROW(w.write_header(), ArgumentError);
    EXPECT_THROW(w.set("b", GgufValue::u8(1)), ArgumentError);
    EXPECT_THROW(w.add_tensor("u", GgmlType::F32, {4}), ArgumentError);
    const float data[5] = {1, 2, 3, 4, 5};
    w.write_tensor_data(data, 8);
    EXPECT_THROW(w.finish(), ArgumentError);                     // 8 of 16 bytes
    EXPECT_THROW(w.write_tensor_data(data, 12), ArgumentError);  // 4 bytes too many

    std::vector<uint8_t> storage;
    const GgufFile f = test::parse_exact(out.str(), &storage);
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(f.metadata().size(), 2u);  // general.alignment not written twice
}

}  // namespace
}  // namespace strata
