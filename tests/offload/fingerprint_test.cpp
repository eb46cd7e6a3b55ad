// The model file fingerprint: what changes it and what does not.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "engine/core/error.h"
#include "offload/fingerprint.h"
#include "placement_test_util.h"

namespace strata {
namespace {

std::string random_bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::string s(n, '\0');
    for (char& c : s)
        c = static_cast<char>(rng());
    return s;
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(Fingerprint, SameBytesSameFingerprint) {
    test::ScratchDir dir;
    const std::string bytes = random_bytes(300'000, 1);
    write_file(dir.file("a.gguf"), bytes);
    write_file(dir.file("b.gguf"), bytes);
    const ModelFingerprint a = fingerprint_file({dir.file("a.gguf")});
    EXPECT_EQ(a, fingerprint_file({dir.file("b.gguf")}));
    EXPECT_EQ(a.file_bytes, 300'000u);
    ASSERT_EQ(a.header_hash.size(), 32u);
    EXPECT_EQ(a.header_hash.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(Fingerprint, ChangesWithAHeaderByteOrTheSize) {
    test::ScratchDir dir;
    const std::string bytes = random_bytes(300'000, 2);
    write_file(dir.file("m.gguf"), bytes);
    const ModelFingerprint base = fingerprint_file({dir.file("m.gguf")});
    for (size_t offset : {size_t{0}, size_t{17}, size_t{299'999}}) {
        std::string changed = bytes;
        changed[offset] = static_cast<char>(changed[offset] ^ 1);
        write_file(dir.file("m.gguf"), changed);
        const ModelFingerprint fp = fingerprint_file({dir.file("m.gguf")});
        EXPECT_EQ(fp.file_bytes, base.file_bytes);
        EXPECT_NE(fp.header_hash, base.header_hash) << "byte " << offset;
    }
    write_file(dir.file("m.gguf"), bytes + '\0');
    const ModelFingerprint longer = fingerprint_file({dir.file("m.gguf")});
    EXPECT_EQ(longer.file_bytes, base.file_bytes + 1);
    EXPECT_NE(longer.header_hash, base.header_hash);
}

TEST(Fingerprint, CoversTheSizeBeyondThePrefix) {
    test::ScratchDir dir;
    std::string bytes = random_bytes(kFingerprintPrefixBytes + 4096, 3);
    write_file(dir.file("m.gguf"), bytes);
    const ModelFingerprint base = fingerprint_file({dir.file("m.gguf")});
    // Weights past the prefix are not hashed (documented): same fingerprint.
    bytes[kFingerprintPrefixBytes + 100] ^= 1;
    write_file(dir.file("m.gguf"), bytes);
    EXPECT_EQ(fingerprint_file({dir.file("m.gguf")}), base);
    bytes.resize(bytes.size() - 1);
    write_file(dir.file("m.gguf"), bytes);
    EXPECT_NE(fingerprint_file({dir.file("m.gguf")}).header_hash, base.header_hash);
}

TEST(Fingerprint, ShardsCountInOrder) {
    test::ScratchDir dir;
    write_file(dir.file("a"), random_bytes(1000, 4));
    write_file(dir.file("b"), random_bytes(2000, 5));
    const ModelFingerprint ab = fingerprint_file({dir.file("a"), dir.file("b")});
    const ModelFingerprint ba = fingerprint_file({dir.file("b"), dir.file("a")});
    EXPECT_EQ(ab.file_bytes, 3000u);
    EXPECT_EQ(ba.file_bytes, 3000u);
    EXPECT_NE(ab.header_hash, ba.header_hash);
    EXPECT_NE(ab.header_hash, fingerprint_file({dir.file("a")}).header_hash);
}

TEST(Fingerprint, ReportsUnreadableFiles) {
    test::ScratchDir dir;
    try {
        fingerprint_file({dir.file("absent.gguf")});
        FAIL() << "accepted";
    } catch (const SystemError& e) {
        EXPECT_NE(std::string(e.what()).find(dir.file("absent.gguf")), std::string::npos);
    }
    EXPECT_THROW(fingerprint_file({}), ArgumentError);
}

}  // namespace
}  // namespace strata
