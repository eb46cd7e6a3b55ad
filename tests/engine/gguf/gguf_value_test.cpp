// GgufValue: typed access checks types and ranges, errors name the key, display abbreviates.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>

#include "engine/core/error.h"
#include "engine/gguf/gguf_value.h"

namespace strata {
namespace {

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const FormatError& e) {
        return e.what();
    }
    return "<no FormatError>";
}

TEST(GgufValue, AsIntAcceptsEveryIntegerType) {
    EXPECT_EQ(GgufValue::u8(250).as_int("k"), 250);
    EXPECT_EQ(GgufValue::i8(-100).as_int("k"), -100);
    EXPECT_EQ(GgufValue::u16(65535).as_int("k"), 65535);
    EXPECT_EQ(GgufValue::i16(-32768).as_int("k"), -32768);
    EXPECT_EQ(GgufValue::u32(4000000000u).as_int("k"), 4000000000LL);
    EXPECT_EQ(GgufValue::i32(-5).as_int("k"), -5);
    EXPECT_EQ(GgufValue::i64(std::numeric_limits<int64_t>::min()).as_int("k"),
              std::numeric_limits<int64_t>::min());
    EXPECT_EQ(GgufValue::u64(1ULL << 62).as_int("k"), int64_t{1} << 62);
}

TEST(GgufValue, AsIntRejectsU64BeyondInt64) {
    const std::string msg = error_of([] { GgufValue::u64(~0ULL).as_int("big.key"); });
    EXPECT_NE(msg.find("big.key"), std::string::npos) << msg;
    EXPECT_NE(msg.find("18446744073709551615"), std::string::npos) << msg;
}

TEST(GgufValue, WrongTypeNamesKeyAndTypes) {
    EXPECT_EQ(error_of([] { GgufValue::string("x").as_int("llama.block_count"); }),
              "key 'llama.block_count' has type string, expected an integer");
    EXPECT_EQ(error_of([] { GgufValue::boolean(true).as_int("a"); }),
              "key 'a' has type bool, expected an integer");
    EXPECT_EQ(error_of([] { GgufValue::i32s({1}).as_string("b"); }),
              "key 'b' has type array of i32, expected string");
    EXPECT_EQ(error_of([] { GgufValue::u32(1).as_bool("c"); }),
              "key 'c' has type u32, expected bool");
    EXPECT_EQ(error_of([] { GgufValue::f32s({1}).as_strings("d"); }),
              "key 'd' has type array of f32, expected array of string");
}

TEST(GgufValue, AsFloatTakesFloatsAndExactIntegers) {
    EXPECT_EQ(GgufValue::f32(1e-6f).as_float("k"), static_cast<double>(1e-6f));
    EXPECT_EQ(GgufValue::f64(0.1).as_float("k"), 0.1);
    EXPECT_EQ(GgufValue::u32(10000).as_float("k"), 10000.0);
    EXPECT_EQ(GgufValue::i64(-(int64_t{1} << 53)).as_float("k"), -9007199254740992.0);
    const std::string msg = error_of([] { GgufValue::u64((1ULL << 53) + 1).as_float("f"); });
    EXPECT_NE(msg.find("9007199254740993"), std::string::npos) << msg;
    EXPECT_NE(error_of([] { GgufValue::u64(~0ULL).as_float("f"); }).find("18446744073709551615"),
              std::string::npos);
    EXPECT_NE(error_of([] { GgufValue::string("1.0").as_float("rope"); }).find("expected a float"),
              std::string::npos);
}

TEST(GgufValue, ScalarBytesAreLittleEndian) {
    const GgufValue v = GgufValue::u32(0x11223344);
    ASSERT_EQ(v.packed().size(), 4u);
    EXPECT_EQ(v.packed()[0], 0x44);
    EXPECT_EQ(v.packed()[3], 0x11);
    EXPECT_EQ(GgufValue::f64(1.0).packed().size(), 8u);
    EXPECT_TRUE(GgufValue::string("s").packed().empty());
}

TEST(GgufValue, DefaultIsU8Zero) {
    const GgufValue v;
    EXPECT_EQ(v.type(), GgufType::UINT8);
    EXPECT_EQ(v.as_int("k"), 0);
    EXPECT_EQ(v.to_display_string(), "0");
}

TEST(GgufValue, Arrays) {
    const GgufValue s = GgufValue::strings({"a", "bc"});
    EXPECT_TRUE(s.is_array());
    EXPECT_EQ(s.array_type(), GgufType::STRING);
    EXPECT_EQ(s.array_size(), 2u);
    EXPECT_EQ(s.as_strings("k")[1], "bc");

    const GgufValue i = GgufValue::i32s({-1, 7, 1 << 30});
    EXPECT_EQ(i.as_ints("k"), (std::vector<int64_t>{-1, 7, 1 << 30}));
    EXPECT_EQ(GgufValue::f32s({0.5f, -2.0f}).as_floats("k"), (std::vector<float>{0.5f, -2.0f}));
    EXPECT_EQ(GgufValue::bools({true, false, true}).as_bools("k"),
              (std::vector<bool>{true, false, true}));

    std::vector<uint8_t> packed = {1, 0, 0xFF, 0xFF};  // u16 1, u16 65535
    const GgufValue u = GgufValue::scalar_array(GgufType::UINT16, packed, 2);
    EXPECT_EQ(u.as_ints("k"), (std::vector<int64_t>{1, 65535}));
    EXPECT_THROW(u.as_floats("k"), FormatError);

    std::vector<uint8_t> big(8, 0xFF);
    const std::string msg =
        error_of([&] { GgufValue::scalar_array(GgufType::UINT64, big, 1).as_ints("arr"); });
    EXPECT_NE(msg.find("arr"), std::string::npos) << msg;
}

TEST(GgufValue, ScalarArrayChecksSizes) {
    EXPECT_THROW(GgufValue::scalar_array(GgufType::UINT32, std::vector<uint8_t>(7), 2),
                 ArgumentError);
    EXPECT_THROW(GgufValue::scalar_array(GgufType::STRING, {}, 0), ArgumentError);
    EXPECT_THROW(GgufValue::raw_scalar(GgufType::INT16, {1, 2, 3}), ArgumentError);
}

TEST(GgufValue, TypeNamesAndSizes) {
    EXPECT_EQ(gguf_type_name(GgufType::UINT32), "u32");
    EXPECT_EQ(gguf_type_name(GgufType::STRING), "string");
    EXPECT_EQ(gguf_type_name(static_cast<GgufType>(42)), "invalid(42)");
    EXPECT_EQ(gguf_scalar_size(GgufType::FLOAT64), 8u);
    EXPECT_EQ(gguf_scalar_size(GgufType::BOOL), 1u);
    EXPECT_EQ(gguf_scalar_size(GgufType::ARRAY), 0u);
    EXPECT_TRUE(gguf_type_valid(12));
    EXPECT_FALSE(gguf_type_valid(13));
    EXPECT_FALSE(gguf_type_valid(-1));
}

TEST(GgufValue, DisplayString) {
    EXPECT_EQ(GgufValue::u32(262144).to_display_string(), "262144");
    EXPECT_EQ(GgufValue::f32(1e-6f).to_display_string(), "1e-06");
    EXPECT_EQ(GgufValue::boolean(false).to_display_string(), "false");
    EXPECT_EQ(GgufValue::string("a\"b\n").to_display_string(), "\"a\\\"b\\n\"");
    EXPECT_EQ(GgufValue::i32s({1, 2, 3}).to_display_string(), "[3 × i32: 1, 2, 3]");

    std::vector<std::string> tokens(262144, "tok");
    tokens[0] = "<pad>";
    tokens[1] = "<eos>";
    EXPECT_EQ(GgufValue::strings(tokens).to_display_string(2),
              "[262144 × string: \"<pad>\", \"<eos>\", …]");
    EXPECT_EQ(GgufValue::strings({}).to_display_string(), "[0 × string]");

    const std::string long_text(1000, 'x');
    const std::string shown = GgufValue::string(long_text).to_display_string();
    EXPECT_LT(shown.size(), 200u);
    EXPECT_NE(shown.find("…"), std::string::npos);
}

}  // namespace
}  // namespace strata
