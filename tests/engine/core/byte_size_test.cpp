// Byte sizes as users type them and as Strata prints them (engine/core/byte_size.h).
#include <gtest/gtest.h>

#include "engine/core/byte_size.h"
#include "engine/core/error.h"

namespace {

using strata::parse_byte_size;

TEST(ByteSize, ParsesUnits) {
    EXPECT_EQ(parse_byte_size("4096"), 4096u);
    EXPECT_EQ(parse_byte_size("6G"), 6ull << 30);
    EXPECT_EQ(parse_byte_size("6GiB"), 6ull << 30);
    EXPECT_EQ(parse_byte_size("6gb"), 6ull << 30);
    EXPECT_EQ(parse_byte_size("512M"), 512ull << 20);
    EXPECT_EQ(parse_byte_size("1.5G"), 3ull << 29);
    EXPECT_EQ(parse_byte_size("2T"), 2ull << 40);
}

TEST(ByteSize, RejectsGarbage) {
    for (const char* bad : {"", "G", "-1G", "1.2.3G", "6X", "6 G", "1e400", "99999999999T"}) {
        EXPECT_THROW(parse_byte_size(bad), strata::ArgumentError) << bad;
    }
}

TEST(ByteSize, Formats) {
    EXPECT_EQ(strata::format_bytes(123), "123 B");
    EXPECT_EQ(strata::format_bytes(6ull << 30), "6.00 GiB");
    EXPECT_EQ(strata::format_bytes(1536ull << 20), "1.50 GiB");
}

}  // namespace
