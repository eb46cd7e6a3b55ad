// Streamed read speed of DiskStream (direct and mmap) beside a plain sequential pread loop on
// the same cold 1 GiB file, in one run so the numbers compare. The file goes under
// $STRATA_BENCH_DIR, else the system temp directory (pick a real disk, not tmpfs).
#include "offload/disk_stream.h"

#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace strata {
namespace {

constexpr uint64_t kFileBytes = 1ull << 30;
constexpr uint64_t kReadBytes = 12345678;  // a tensor-sized read at odd offsets

const std::string& bench_file() {
    static const std::string path = [] {
        const char* dir = std::getenv("STRATA_BENCH_DIR");
        const std::filesystem::path root = dir ? dir : std::filesystem::temp_directory_path();
        const std::string p = (root / "strata_disk_stream_bench.bin").string();
        if (std::filesystem::exists(p) && std::filesystem::file_size(p) == kFileBytes) return p;
        std::mt19937_64 rng(1);
        std::vector<uint64_t> chunk((64ull << 20) / 8);
        const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        for (uint64_t done = 0; done < kFileBytes; done += chunk.size() * 8) {
            for (uint64_t& w : chunk)
                w = rng();
            if (::write(fd, chunk.data(), chunk.size() * 8) < 0) std::abort();
        }
        ::fsync(fd);
        ::close(fd);
        return p;
    }();
    return path;
}

void evict(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
}

// Buffered pread of the whole file in 1 MiB chunks, page cache emptied before each pass.
void BM_SequentialPread(benchmark::State& state) {
    const std::string& path = bench_file();
    std::vector<char> buffer(1 << 20);
    for (auto _ : state) {
        state.PauseTiming();
        evict(path);
        const int fd = ::open(path.c_str(), O_RDONLY);
        state.ResumeTiming();
        for (uint64_t off = 0; off < kFileBytes; off += buffer.size()) {
            benchmark::DoNotOptimize(::pread(fd, buffer.data(), buffer.size(), off));
        }
        state.PauseTiming();
        ::close(fd);
        state.ResumeTiming();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kFileBytes));
}

// The same loop with O_DIRECT into an aligned buffer: what one synchronous reader gets.
void BM_SequentialPreadDirect(benchmark::State& state) {
    const std::string& path = bench_file();
    const uint64_t chunk = 1 << 20;
    void* buffer = std::aligned_alloc(4096, chunk);
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
    if (fd < 0) {
        std::free(buffer);
        state.SkipWithError("O_DIRECT not supported here");
        return;
    }
    for (auto _ : state) {
        for (uint64_t off = 0; off < kFileBytes; off += chunk) {
            benchmark::DoNotOptimize(::pread(fd, buffer, chunk, off));
        }
    }
    ::close(fd);
    std::free(buffer);
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kFileBytes));
}

// One iteration = one pass over the schedule (reads of kReadBytes covering the file); the
// stream runs on across passes like it does across tokens.
void BM_DiskStream(benchmark::State& state) {
    const std::string& path = bench_file();
    evict(path);
    DiskStreamOptions options;
    options.mode = static_cast<DiskIo>(state.range(0));
    options.queue_depth = static_cast<int>(state.range(1));
    options.block_bytes = static_cast<uint64_t>(state.range(2)) << 10;
    DiskStream stream({path}, options);
    if (stream.mode() != options.mode) {
        state.SkipWithError("mode not available on this file system");
        return;
    }
    int n = 0;
    uint64_t pass_bytes = 0;
    for (uint64_t off = 1000; off + kReadBytes <= kFileBytes; off += kReadBytes, ++n) {
        stream.add_read(0, off, kReadBytes);
        pass_bytes += kReadBytes;
    }
    for (auto _ : state) {
        for (int id = 0; id < n; ++id) {
            benchmark::DoNotOptimize(stream.acquire(id));
            stream.release(id);
        }
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * pass_bytes));
    state.counters["wait_s"] = stream.stats().wait_seconds;
    state.SetLabel(std::string(disk_io_name(stream.mode())));
}

BENCHMARK(BM_SequentialPread)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SequentialPreadDirect)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DiskStream)
    ->ArgNames({"mode", "qd", "block_kib"})
    ->Args({static_cast<int>(DiskIo::Direct), 1, 1024})
    ->Args({static_cast<int>(DiskIo::Direct), 8, 256})
    ->Args({static_cast<int>(DiskIo::Direct), 8, 1024})
    ->Args({static_cast<int>(DiskIo::Direct), 8, 4096})
    ->Args({static_cast<int>(DiskIo::Direct), 32, 1024})
    ->Args({static_cast<int>(DiskIo::Mmap), 8, 1024})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
