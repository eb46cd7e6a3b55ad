// Model file fingerprint (fingerprint.h).
#include "offload/fingerprint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "engine/core/error.h"

namespace strata {

namespace {

// Two unrelated 64-bit hashes (FNV-1a, and a multiply-xorshift mix) so that the 128-bit result
// does not inherit one hash's weaknesses. Identity, not security: nobody is attacking this.
struct Hash128 {
    uint64_t fnv = 0xcbf29ce484222325ull;
    uint64_t mix = 0x9e3779b97f4a7c15ull;

    void add(const unsigned char* data, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            fnv = (fnv ^ data[i]) * 0x100000001b3ull;
            mix = (mix ^ data[i]) * 0xff51afd7ed558ccdull;
            mix ^= mix >> 29;
        }
    }
    void add_u64(uint64_t v) {
        unsigned char bytes[8];
        for (int i = 0; i < 8; ++i)
            bytes[i] = static_cast<unsigned char>(v >> (8 * i));
        add(bytes, sizeof bytes);
    }
    std::string hex() const {
        char out[33];
        std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(fnv),
                      static_cast<unsigned long long>(mix));
        return out;
    }
};

class File {
  public:
    explicit File(const std::string& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY)) {
        if (fd_ < 0) fail("cannot open");
    }
    ~File() { ::close(fd_); }
    File(const File&) = delete;
    File& operator=(const File&) = delete;

    uint64_t size() const {
        struct stat st {};
        if (::fstat(fd_, &st) != 0) fail("cannot stat");
        return static_cast<uint64_t>(st.st_size);
    }
    // Reads exactly n bytes at offset (the file is at least offset + n long).
    void read(unsigned char* dst, size_t n, uint64_t offset) const {
        while (n > 0) {
            const ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(offset));
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) fail("cannot read");
            if (got == 0)
                throw SystemError(cat("cannot read '", path_, "': it ended early (",
                                      "shrank while being read?)"));
            dst += got;
            n -= static_cast<size_t>(got);
            offset += static_cast<uint64_t>(got);
        }
    }

  private:
    [[noreturn]] void fail(const char* what) const {
        throw SystemError(cat(what, " '", path_, "': ", std::strerror(errno)));
    }
    std::string path_;
    int fd_;
};

}  // namespace

ModelFingerprint fingerprint_file(const std::vector<std::string>& shard_paths) {
    if (shard_paths.empty()) throw ArgumentError("fingerprint_file: no model files given");
    ModelFingerprint fp;
    Hash128 hash;
    std::vector<unsigned char> buffer(1 << 20);
    for (const std::string& path : shard_paths) {
        const File file(path);
        const uint64_t size = file.size();
        fp.file_bytes += size;
        hash.add_u64(size);
        const uint64_t prefix = std::min(size, kFingerprintPrefixBytes);
        for (uint64_t offset = 0; offset < prefix; offset += buffer.size()) {
            const auto n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), prefix - offset));
            file.read(buffer.data(), n, offset);
            hash.add(buffer.data(), n);
        }
    }
    fp.header_hash = hash.hex();
    return fp;
}

}  // namespace strata
