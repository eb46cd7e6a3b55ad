// Test helper: a scratch file path, in /dev/shm when available (synthetic models of real
// shapes are hundreds of MiB; RAM-backed files keep the tests fast), deleted on destruction.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace strata::testing {

class ScratchFile {
  public:
    explicit ScratchFile(const std::string& name) {
        std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm/" : ::testing::TempDir();
        path_ = dir + "strata_" + std::to_string(getpid()) + "_" + name;
    }
    ~ScratchFile() {
        std::error_code ignored;
        std::filesystem::remove(path_, ignored);
    }
    ScratchFile(const ScratchFile&) = delete;
    ScratchFile& operator=(const ScratchFile&) = delete;

    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

}  // namespace strata::testing
