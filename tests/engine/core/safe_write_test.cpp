// Safe writes: the target is replaced whole or not at all; inputs, open and mapped files, folders
// and devices are refused; temporary files are not left behind; stale ones are removed.
#include "engine/core/safe_write.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/core/temp_files.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

class SafeWrite : public ::testing::Test {
  protected:
    void SetUp() override {
        std::random_device rd;
        dir_ = fs::temp_directory_path() / ("strata-safe-write-" + std::to_string(rd()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string file(const std::string& name) const { return (dir_ / name).string(); }
    static std::string read(const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        return {std::istreambuf_iterator<char>(in), {}};
    }
    static void put(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
    int temp_count() const {
        int n = 0;
        for (const auto& e : fs::directory_iterator(dir_)) n += e.path().filename().string().find(".strata-tmp.") != std::string::npos;
        return n;
    }
    fs::path dir_;
};

TEST_F(SafeWrite, WritesAndReplacesWhole) {
    const std::string path = file("a.json");
    write_file_atomic(path, "first", "test file");
    EXPECT_EQ(read(path), "first");
    write_file_atomic(path, "second, longer", "test file");
    EXPECT_EQ(read(path), "second, longer");
    EXPECT_EQ(temp_count(), 0);
}

TEST_F(SafeWrite, WithoutCommitTheOldFileStays) {
    const std::string path = file("kept.txt");
    put(path, "old");
    {
        AtomicFileWriter w(path, "test file");
        w.write("new but never committed");
    }
    EXPECT_EQ(read(path), "old");
    EXPECT_EQ(temp_count(), 0);
}

TEST_F(SafeWrite, KeepsPermissionsOfAReplacedFile) {
    const std::string path = file("mode.txt");
    put(path, "x");
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    write_file_atomic(path, "y", "test file");
    EXPECT_EQ(fs::status(path).permissions(), fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST_F(SafeWrite, RefusesInputsOpenAndMappedFiles) {
    const std::string input = file("input.txt");
    put(input, "the user's file");
    note_input_file(input);
    EXPECT_THROW(write_file_atomic(input, "lost", "test file"), ArgumentError);

    const std::string open_one = file("open.txt");
    put(open_one, "open");
    {
        std::ifstream held(open_one);
        EXPECT_THROW(write_file_atomic(open_one, "lost", "test file"), ArgumentError);
    }
    write_file_atomic(open_one, "closed now", "test file");
    EXPECT_EQ(read(open_one), "closed now");

    const std::string mapped = file("mapped.bin");
    put(mapped, std::string(8192, 'm'));
    const int fd = ::open(mapped.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    void* p = ::mmap(nullptr, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    ASSERT_NE(p, MAP_FAILED);
    EXPECT_THROW(write_file_atomic(mapped, "lost", "test file"), ArgumentError);
    // Through a symbolic link too.
    fs::create_symlink(mapped, file("link"));
    EXPECT_THROW(write_file_atomic(file("link"), "lost", "test file"), ArgumentError);
    ::munmap(p, 8192);
    EXPECT_EQ(read(mapped), std::string(8192, 'm'));
    EXPECT_EQ(read(input), "the user's file");
}

TEST_F(SafeWrite, ALinkIsWrittenThroughNotReplaced) {
    put(file("real.txt"), "old");
    fs::create_symlink(file("real.txt"), file("alias.txt"));
    write_file_atomic(file("alias.txt"), "new", "test file");
    EXPECT_TRUE(fs::is_symlink(file("alias.txt")));
    EXPECT_EQ(read(file("real.txt")), "new");
}

TEST_F(SafeWrite, RefusesFoldersDevicesAndMissingFolders) {
    EXPECT_THROW(write_file_atomic(dir_.string(), "x", "test file"), ArgumentError);
    EXPECT_THROW(write_file_atomic("/dev/null", "x", "test file"), ArgumentError);
    EXPECT_THROW(write_file_atomic(file("no/such/folder/x"), "x", "test file"), SystemError);
    EXPECT_THROW(write_file_atomic("", "x", "test file"), ArgumentError);
    try {
        write_file_atomic(dir_.string(), "x", "plan file");
    } catch (const ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("plan file"), std::string::npos) << e.what();
    }
}

TEST_F(SafeWrite, RemovesStaleTemporaryFilesOfDeadProcesses) {
    const std::string target = file("t.json");
    // pid 4194303 is above the default pid_max: never a live process.
    const std::string stale = file(".t.json.strata-tmp.4194303");
    const std::string live = file(".t.json.strata-tmp." + std::to_string(::getpid()) + "0");  // not ours, maybe alive
    put(stale, "left by kill -9");
    remove_stale_temp_files(target);
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_EQ(temp_path_for(target), file(".t.json.strata-tmp." + std::to_string(::getpid())));
    (void)live;
}

TEST_F(SafeWrite, FailedWriteLeavesTheOldFile) {
    // A file size limit makes the write fail with EFBIG (SIGXFSZ ignored, as main does).
    const std::string path = file("limited.txt");
    put(path, "old");
    const pid_t child = ::fork();
    if (child == 0) {
        ::signal(SIGXFSZ, SIG_IGN);
        rlimit lim{1000, 1000};
        ::setrlimit(RLIMIT_FSIZE, &lim);
        try {
            write_file_atomic(path, std::string(100000, 'x'), "test file");
        } catch (const SystemError&) {
            ::_exit(3);
        }
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 3);
    EXPECT_EQ(read(path), "old");
    EXPECT_EQ(temp_count(), 0);
}

}  // namespace
}  // namespace strata
