// Bounded reads: regular files only (a fifo never blocks), size caps, JSON nesting caps.
#include "engine/core/bounded_read.h"

#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/core/safe_write.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

class BoundedRead : public ::testing::Test {
  protected:
    void SetUp() override {
        std::random_device rd;
        dir_ = fs::temp_directory_path() / ("strata-bounded-read-" + std::to_string(rd()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string file(const std::string& name) const { return (dir_ / name).string(); }
    fs::path dir_;
};

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST_F(BoundedRead, ReadsARegularFileWhole) {
    std::string text(100000, '\0');
    std::mt19937 rng(5);
    for (char& c : text) c = static_cast<char>(rng());
    std::ofstream(file("a.bin"), std::ios::binary) << text;
    EXPECT_EQ(read_bounded_file(file("a.bin"), "test file"), text);
}

TEST_F(BoundedRead, RefusesWhatIsNotARegularFileByName) {
    ASSERT_EQ(::mkfifo(file("fifo").c_str(), 0600), 0);
    EXPECT_NE(message_of([&] { read_bounded_file(file("fifo"), "plan file"); }).find("fifo"), std::string::npos);
    EXPECT_NE(message_of([&] { read_bounded_file(dir_.string(), "plan file"); }).find("folder"), std::string::npos);
    EXPECT_NE(message_of([&] { read_bounded_file("/dev/zero", "plan file"); }).find("device"), std::string::npos);
    EXPECT_NE(message_of([&] { read_bounded_file(file("missing"), "plan file"); }).find("plan file"), std::string::npos);
    EXPECT_THROW(read_bounded_file("", "plan file"), ArgumentError);
}

TEST_F(BoundedRead, CapsTheSize) {
    std::ofstream(file("big")) << std::string(5000, 'x');
    const std::string m = message_of([&] { read_bounded_file(file("big"), "chat save", ReadOptions{4096}); });
    EXPECT_NE(m.find("chat save"), std::string::npos) << m;
    EXPECT_EQ(read_bounded_file(file("big"), "chat save", ReadOptions{5000}).size(), 5000u);
}

TEST_F(BoundedRead, ReadFilesAreProtectedFromWritesUnlessTold) {
    std::ofstream(file("in.json")) << "{}";
    std::ofstream(file("cache.json")) << "{}";
    read_bounded_file(file("in.json"), "plan file");
    read_bounded_file(file("cache.json"), "hardware profile", ReadOptions{kMaxJsonFileBytes, false});
    EXPECT_THROW(write_file_atomic(file("in.json"), "{}", "plan file"), ArgumentError);
    write_file_atomic(file("cache.json"), "{\"a\": 1}", "hardware profile");
}

TEST(BoundedJson, DeepNestingIsAFormatErrorNotACrash) {
    EXPECT_THROW(parse_json_bounded(std::string(100000, '['), "plan"), FormatError);
    EXPECT_THROW(parse_json_bounded(std::string(kMaxJsonDepth + 1, '{'), "plan"), FormatError);
    std::string ok;
    for (int i = 0; i < kMaxJsonDepth; ++i) ok += "[";
    for (int i = 0; i < kMaxJsonDepth; ++i) ok += "]";
    EXPECT_TRUE(parse_json_bounded(ok, "plan").is_array());
    // Brackets inside strings do not count.
    EXPECT_EQ(parse_json_bounded("{\"a\": \"" + std::string(1000, '[') + "\\\"\"}", "plan")["a"].get<std::string>().size(), 1001u);
    EXPECT_THROW(parse_json_bounded("{\"a\": ", "plan"), FormatError);
}

}  // namespace
}  // namespace strata
