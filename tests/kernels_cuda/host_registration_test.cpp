// register_host_memory: copies from a registered read-only file mapping (as the model's RAM
// weights are) reach the device byte for byte, a copy that runs past the registered range takes
// the staged path and is still right, and a handle dropped leaves copies working.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

// A read-only shared mapping of a temporary file of random bytes.
class MappedFile {
  public:
    explicit MappedFile(size_t bytes) : bytes_(bytes), expected_(bytes) {
        std::mt19937 rng(7);
        for (auto& b : expected_) b = static_cast<uint8_t>(rng());
        char path[] = "/tmp/strata-register-XXXXXX";
        const int fd = mkstemp(path);
        EXPECT_GE(fd, 0);
        EXPECT_EQ(write(fd, expected_.data(), bytes), static_cast<ssize_t>(bytes));
        map_ = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        unlink(path);
        EXPECT_NE(map_, MAP_FAILED);
    }
    ~MappedFile() { munmap(map_, bytes_); }
    const uint8_t* data() const { return static_cast<const uint8_t*>(map_); }
    const std::vector<uint8_t>& expected() const { return expected_; }

  private:
    size_t bytes_;
    std::vector<uint8_t> expected_;
    void* map_ = nullptr;
};

// Copies bytes [at, at + n) of the mapping to the device and back.
std::vector<uint8_t> round_trip(CudaBackend& gpu, const MappedFile& f, size_t at, size_t n) {
    const Tensor host = Tensor::contiguous(GgmlType::I8, const_cast<uint8_t*>(f.data() + at),
                                           {static_cast<int64_t>(n)}, MemoryKind::File);
    DeviceTensor dev = gpu.allocate(GgmlType::I8, {static_cast<int64_t>(n)});
    gpu.copy_in(host, dev.tensor);
    std::vector<uint8_t> back(n, 0);
    Tensor out = Tensor::contiguous(GgmlType::I8, back.data(), {static_cast<int64_t>(n)});
    gpu.copy_out(dev.tensor, out);
    return back;
}

std::vector<uint8_t> slice(const std::vector<uint8_t>& v, size_t at, size_t n) {
    return std::vector<uint8_t>(v.begin() + static_cast<ptrdiff_t>(at), v.begin() + static_cast<ptrdiff_t>(at + n));
}

TEST(HostRegistration, CopiesFromARegisteredFileMappingAreExact) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t bytes = 96 * page + 123;
    MappedFile f(bytes);
    const size_t reg = 64 * page;  // the first 64 pages registered, the rest not
    Buffer handle = gpu.register_host_memory(f.data(), reg);
    ASSERT_TRUE(handle) << "a read-only file mapping must be registrable";
    EXPECT_EQ(handle.size(), reg);
    // Inside the range (direct copy), across its end (staged), past it (staged).
    for (auto [at, n] : {std::pair<size_t, size_t>{17, 40 * page}, {60 * page + 5, 10 * page}, {70 * page, bytes - 70 * page}}) {
        EXPECT_EQ(round_trip(gpu, f, at, n), slice(f.expected(), at, n)) << "bytes [" << at << ", " << at + n << ")";
    }
    // The same pages again: refused (an empty handle), never an error left behind.
    EXPECT_FALSE(gpu.register_host_memory(f.data(), page));
    EXPECT_EQ(round_trip(gpu, f, 3, 2 * page), slice(f.expected(), 3, 2 * page));
    handle.reset();
    EXPECT_EQ(round_trip(gpu, f, 11, 8 * page), slice(f.expected(), 11, 8 * page));
}

}  // namespace
}  // namespace strata::cuda
