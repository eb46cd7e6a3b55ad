// Every malformed-file case the reader must reject, each made by corrupting a valid file at
// one precise place: the result must be a FormatError whose message carries the bad value.
#include <gtest/gtest.h>

#include "gguf_test_util.h"

namespace strata {
namespace {

using test::expect_format_error;
using test::Raw;

constexpr uint32_t kF32 = 0, kQ4_0 = 2, kQ8_0 = 8;
constexpr int32_t kTypeU32 = 4, kTypeString = 8, kTypeArray = 9, kTypeU64 = 10;

// ---- header ----

TEST(GgufMalformed, BadMagic) {
    std::string f = test::sample_file();
    f[3] = 'X';
    expect_format_error(f, {"not a GGUF file", "'GGUX'"});
    expect_format_error("GG", {"2 bytes"});
    expect_format_error("", {"0 bytes"});
}

TEST(GgufMalformed, Versions) {
    expect_format_error(Raw().header(0, 0, 0).b, {"version 0"});
    expect_format_error(Raw().header(1, 0, 0).b, {"GGUFv1 is no longer supported"});
    expect_format_error(Raw().header(4, 0, 0).b, {"version 4"});
    expect_format_error(Raw().header(0x03000000, 0, 0).b,
                        {"file appears to be big-endian", "0x3000000"});
    std::vector<uint8_t> storage;
    EXPECT_EQ(test::parse_exact(Raw().header(2, 0, 0).b, &storage).version(), 2u);
}

TEST(GgufMalformed, CountsBeyondTheFile) {
    expect_format_error(Raw().header(3, int64_t{1} << 60, 0).b,
                        {"tensor count 1152921504606846976"});
    expect_format_error(Raw().header(3, -1, 0).b, {"tensor count -1"});
    expect_format_error(Raw().header(3, 0, int64_t{1} << 60).b,
                        {"metadata count 1152921504606846976"});
    expect_format_error(Raw().header(3, 0, -5).b, {"metadata count -5"});
    // Plausible against the header, impossible after the metadata: 3 tensor infos need 96 bytes.
    expect_format_error(Raw().header(3, 3, 1).kv_u32("a", 1).zeros(90).b, {"tensor count 3"});
}

// ---- metadata ----

TEST(GgufMalformed, KeyLengthBeyondTheFile) {
    expect_format_error(Raw().header(3, 0, 1).u64(uint64_t{1} << 40).zeros(20).b,
                        {"1099511627776", "metadata entry #0"});
}

TEST(GgufMalformed, StringValueLengthBeyondTheFile) {
    Raw r;
    r.header(3, 0, 1).str("general.name").i32(kTypeString).u64(5000).b += "short";
    expect_format_error(r.b, {"general.name", "5000"});
}

TEST(GgufMalformed, HugeStringArrayRejectedBeforeReserving) {
    Raw r;
    r.header(3, 0, 1).str("tokenizer.ggml.tokens").i32(kTypeArray).i32(kTypeString);
    r.u64(uint64_t{1} << 60).str("a").str("b");
    expect_format_error(r.b, {"tokenizer.ggml.tokens", "1152921504606846976"});
}

TEST(GgufMalformed, HugeScalarArrayRejected) {
    Raw r;  // 2^62 u32 elements: count * 4 overflows 64 bits
    r.header(3, 0, 1).str("scores").i32(kTypeArray).i32(kTypeU32).u64(uint64_t{1} << 62).u32(0);
    expect_format_error(r.b, {"scores", "4611686018427387904"});
}

TEST(GgufMalformed, ArrayStringLengthBeyondTheFile) {
    Raw r;
    r.header(3, 0, 1).str("toks").i32(kTypeArray).i32(kTypeString).u64(2).str("ok").u64(999);
    expect_format_error(r.b, {"toks", "999"});
}

TEST(GgufMalformed, EmptyKey) {
    expect_format_error(Raw().header(3, 0, 2).kv_u32("a", 1).kv_u32("", 2).b,
                        {"metadata entry #1 has an empty key"});
}

TEST(GgufMalformed, DuplicateKey) {
    std::string f = test::sample_file();
    const size_t p = test::after_string(f, "test.dup.bbb");
    f.replace(p - 3, 3, "aaa");
    expect_format_error(f, {"duplicate key 'test.dup.aaa'"});
}

TEST(GgufMalformed, NestedArray) {
    Raw r;
    r.header(3, 0, 1).str("nest").i32(kTypeArray).i32(kTypeArray).u64(1).i32(kTypeU32).u64(0);
    expect_format_error(r.b, {"'nest'", "nested arrays"});
}

TEST(GgufMalformed, InvalidValueTypes) {
    expect_format_error(Raw().header(3, 0, 1).str("k").i32(13).u32(0).b,
                        {"'k'", "invalid value type 13"});
    expect_format_error(Raw().header(3, 0, 1).str("k").i32(-2).u32(0).b, {"-2"});
    expect_format_error(Raw().header(3, 0, 1).str("arr").i32(kTypeArray).i32(77).u64(0).b,
                        {"'arr'", "element type 77"});
}

TEST(GgufMalformed, AlignmentKey) {
    Raw wrong_type;
    wrong_type.header(3, 0, 1).str("general.alignment").i32(kTypeU64).u64(32);
    expect_format_error(wrong_type.b, {"general.alignment", "type u64, expected u32"});
    expect_format_error(Raw().header(3, 0, 1).kv_u32("general.alignment", 0).b,
                        {"general.alignment = 0"});
    expect_format_error(Raw().header(3, 0, 1).kv_u32("general.alignment", 48).b,
                        {"general.alignment = 48", "power of two"});
}

// ---- tensor infos (a valid file, one field changed) ----

TEST(GgufMalformed, DuplicateTensorName) {
    std::string f = test::sample_file();
    const size_t p = test::after_string(f, "blk.0.attn_k.weight");
    f[p - 8] = 'q';  // attn_k -> attn_q
    expect_format_error(f, {"duplicate tensor name 'blk.0.attn_q.weight'", "#0 and #1"});
}

TEST(GgufMalformed, TensorNameTooLong) {
    const std::string name(64, 'n');
    Raw r;
    r.header(3, 1, 0).tensor_info(name, {4}, kF32, 0).pad_to(32).zeros(16);
    expect_format_error(r.b, {"is 64 bytes long", "maximum is 63"});
    Raw ok;  // 63 bytes is fine
    ok.header(3, 1, 0).tensor_info(std::string(63, 'n'), {4}, kF32, 0).pad_to(32).zeros(16);
    std::vector<uint8_t> storage;
    EXPECT_EQ(test::parse_exact(ok.b, &storage).tensors()[0].name.size(), 63u);
}

TEST(GgufMalformed, NDims) {
    for (uint32_t n_dims : {0u, 5u}) {
        std::string f = test::sample_file();
        test::patch(f, test::locate_tensor(f, "output_norm.weight", 1).n_dims, n_dims);
        expect_format_error(f, {"'output_norm.weight'", "n_dims = " + std::to_string(n_dims)});
    }
}

TEST(GgufMalformed, NonPositiveDims) {
    for (int64_t bad : {int64_t{-3}, int64_t{0}, INT64_MIN}) {
        std::string f = test::sample_file();
        test::patch(f, test::locate_tensor(f, "blk.0.attn_k.weight", 2).ne + 8, bad);
        expect_format_error(f, {"'blk.0.attn_k.weight'", "ne[1] = " + std::to_string(bad)});
    }
}

TEST(GgufMalformed, ElementCountOverflow) {
    std::string f = test::sample_file();
    const auto pos = test::locate_tensor(f, "blk.0.attn_k.weight", 2);
    test::patch(f, pos.ne, int64_t{1} << 32);
    test::patch(f, pos.ne + 8, int64_t{1} << 32);
    expect_format_error(f, {"'blk.0.attn_k.weight'", "[4294967296, 4294967296]", "64 bits"});
}

TEST(GgufMalformed, ByteSizeOverflow) {
    std::string f = test::sample_file();  // 2^31 x 2^31 elements fit; x 4 bytes each do not
    const auto pos = test::locate_tensor(f, "blk.0.attn_k.weight", 2);
    test::patch(f, pos.ne, int64_t{1} << 31);
    test::patch(f, pos.ne + 8, int64_t{1} << 31);
    test::patch(f, pos.type, kF32);
    expect_format_error(f, {"'blk.0.attn_k.weight'", "[2147483648, 2147483648]", "byte size"});
}

TEST(GgufMalformed, UnknownOrRemovedType) {
    for (uint32_t type : {4u, 5u, 31u, 36u, 99u, 0xFFFFFFFFu}) {
        std::string f = test::sample_file();
        test::patch(f, test::locate_tensor(f, "output_norm.weight", 1).type, type);
        expect_format_error(f, {"'output_norm.weight'",
                                "unknown or removed ggml type " + std::to_string(int32_t(type))});
    }
}

TEST(GgufMalformed, RowNotMultipleOfBlockSize) {
    std::string f = test::sample_file();
    test::patch(f, test::locate_tensor(f, "blk.0.attn_q.weight", 2).ne, int64_t{33});
    expect_format_error(f, {"'blk.0.attn_q.weight'", "q8_0", "ne[0] = 33", "block size 32"});
}

// ---- tensor data ----

TEST(GgufMalformed, DataPastEndOfFile) {
    std::string f = test::sample_file();
    std::vector<uint8_t> storage;
    const GgufFile ok = test::parse_exact(f, &storage);
    const uint64_t data_offset = ok.data_offset();
    test::patch(f, test::locate_tensor(f, "output_norm.weight", 1).offset, uint64_t{4096});
    const uint64_t begin = data_offset + 4096;
    expect_format_error(
        f, {"model.gguf: tensor 'output_norm.weight' data [" + std::to_string(begin) + ", " +
            std::to_string(begin + 64) + ") extends past the end of the file (" +
            std::to_string(f.size()) + " bytes)"});
    test::patch(f, test::locate_tensor(f, "output_norm.weight", 1).offset, ~uint64_t{31});
    expect_format_error(f, {"'output_norm.weight'", "18446744073709551584", "past the end"});
}

TEST(GgufMalformed, TruncatedData) {
    std::string f = test::sample_file();
    f.resize(f.size() - 1);
    expect_format_error(f, {"'output_norm.weight'", "extends past the end of the file"});
}

TEST(GgufMalformed, MisalignedOffset) {
    std::string f = test::sample_file();
    const auto pos = test::locate_tensor(f, "output_norm.weight", 1);
    uint64_t off;
    std::memcpy(&off, f.data() + pos.offset, 8);
    test::patch(f, pos.offset, off + 4);
    expect_format_error(f, {"'output_norm.weight'", std::to_string(off + 4), "alignment 32"});
}

TEST(GgufMalformed, OverlappingTensors) {
    std::string f = test::sample_file();
    test::patch(f, test::locate_tensor(f, "blk.0.attn_k.weight", 2).offset, uint64_t{64});
    expect_format_error(f, {"'blk.0.attn_q.weight'", "'blk.0.attn_k.weight'", "overlap"});
}

TEST(GgufMalformed, OutOfOrderTensorsAreAccepted) {
    // We relax ggml's table-order contiguity: swapping two same-size tensors' offsets is valid.
    Raw r;
    r.header(3, 2, 0).tensor_info("a", {8}, kF32, 32).tensor_info("b", {8}, kF32, 0);
    r.pad_to(32).zeros(64);
    std::vector<uint8_t> storage;
    const GgufFile f = test::parse_exact(r.b, &storage);
    EXPECT_EQ(f.tensors()[0].offset, 32u);
    EXPECT_EQ(f.tensors()[1].file_offset, f.data_offset());
}

TEST(GgufMalformed, QuantizedShapeChecks) {
    Raw r;  // Q4_0: 32 per block, 18 bytes per block; two rows
    r.header(3, 1, 0).tensor_info("q", {64, 2}, kQ4_0, 0).pad_to(32).zeros(18 * 4);
    std::vector<uint8_t> storage;
    EXPECT_EQ(test::parse_exact(r.b, &storage).tensors()[0].n_bytes, 72u);
    Raw bad;
    bad.header(3, 1, 0).tensor_info("q", {48}, kQ8_0, 0).pad_to(32).zeros(64);
    expect_format_error(bad.b, {"ne[0] = 48", "block size 32"});
}

// ---- every prefix and every byte ----

TEST(GgufMalformed, TruncationAtEveryByteThrows) {
    const std::string f = test::sample_file();
    for (size_t n = 0; n < f.size(); ++n) {
        std::vector<uint8_t> storage;
        EXPECT_THROW(test::parse_exact(f.substr(0, n), &storage), FormatError) << "prefix " << n;
    }
    std::vector<uint8_t> storage;
    EXPECT_NO_THROW(test::parse_exact(f, &storage));
}

TEST(GgufMalformed, EveryByteFlippedParsesOrThrowsFormatError) {
    const std::string f = test::sample_file();
    size_t rejected = 0, tried = 0;
    for (size_t i = 0; i < f.size(); ++i) {
        for (uint8_t mask : {uint8_t{0xFF}, uint8_t{0x80}, uint8_t{0x01}}) {
            std::string g = f;
            g[i] = static_cast<char>(g[i] ^ mask);
            std::vector<uint8_t> storage;
            ++tried;
            try {
                test::parse_exact(g, &storage);
            } catch (const FormatError&) {
                ++rejected;
            }  // any other exception fails the test
        }
    }
    // A flipped magic or version byte must be refused; a flipped tensor-data byte must not.
    EXPECT_GT(rejected, 0u);
    EXPECT_LT(rejected, tried);
}

}  // namespace
}  // namespace strata
