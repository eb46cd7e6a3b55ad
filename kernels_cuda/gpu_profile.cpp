// Measuring a CUDA device for the cost model (gpu_profile.h): GEMVs and a prefill matmul through
// the backend's ops, copies on a stream of our own (pinned host memory, device to device).
#include "kernels_cuda/gpu_profile.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string_view>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/timing.h"
#include "kernels_cuda/cuda_check.h"

namespace strata::cuda {
namespace {

// A stream of our own for the copies; the backend's ops stay on the backend's stream.
class Stream {
  public:
    Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
    ~Stream() { cudaStreamDestroy(s_); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    cudaStream_t get() const { return s_; }
    void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(s_)); }

  private:
    cudaStream_t s_ = nullptr;
};

class PinnedBuffer {
  public:
    explicit PinnedBuffer(size_t bytes) : bytes_(bytes) {
        CUDA_CHECK(cudaMallocHost(&p_, bytes));
        std::memset(p_, 0x3c, bytes);  // touch every page before timing
    }
    ~PinnedBuffer() { cudaFreeHost(p_); }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    void* data() const { return p_; }
    size_t size() const { return bytes_; }

  private:
    void* p_ = nullptr;
    size_t bytes_;
};

// A device matrix [k, n] of `type` of valid blocks: a few rows quantized from random floats on
// the host, uploaded once and repeated on the device by doubling copies (the speed does not
// depend on the values, only on their being finite).
DeviceTensor random_matrix(CudaBackend& backend, const Stream& stream, GgmlType type, int64_t k,
                           int64_t n) {
    const TypeTraits& traits = type_traits(type);
    const size_t row = row_bytes(type, k);
    const int64_t n_distinct = std::min<int64_t>(n, 16);
    std::vector<uint8_t> host(row * static_cast<size_t>(n_distinct));
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> values(static_cast<size_t>(k));
    for (int64_t r = 0; r < n_distinct; ++r) {
        uint8_t* dst = host.data() + static_cast<size_t>(r) * row;
        if (traits.quantize != nullptr) {
            for (float& v : values) v = uniform(rng);
            traits.quantize(values.data(), dst, k);
        } else {
            for (size_t i = 0; i < row; ++i) dst[i] = static_cast<uint8_t>(rng());
        }
    }
    DeviceTensor m = backend.allocate(type, {k, n}, "gpu profile matrix");
    Tensor first = Tensor::contiguous(type, m.tensor.data, {k, n_distinct}, MemoryKind::Device);
    backend.copy_to_device(Tensor::contiguous(type, host.data(), {k, n_distinct}), first);
    backend.synchronize();  // the copies below, on our stream, read those rows
    auto* base = static_cast<uint8_t*>(m.tensor.data);
    for (int64_t done = n_distinct; done < n;) {
        const int64_t count = std::min(done, n - done);
        CUDA_CHECK(cudaMemcpyAsync(base + static_cast<size_t>(done) * row, base, static_cast<size_t>(count) * row,
                                   cudaMemcpyDeviceToDevice, stream.get()));
        done += count;
    }
    stream.synchronize();
    return m;
}

DeviceTensor random_input(CudaBackend& backend, int64_t k, int64_t n_tokens) {
    std::vector<float> x(static_cast<size_t>(k * n_tokens));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (float& v : x) v = uniform(rng);
    return backend.upload(Tensor::contiguous(GgmlType::F32, x.data(), {k, n_tokens}), "gpu profile input");
}

// Seconds of one matmul y = w · x, from batches of `reps` launches and one synchronize.
double matmul_seconds(CudaBackend& backend, const Tensor& w, const Tensor& x, Tensor& y, int reps,
                      std::chrono::duration<double> budget) {
    const double batch = best_time(
        [&] {
            for (int i = 0; i < reps; ++i) backend.matmul(w, x, y);
            backend.synchronize();
        },
        budget);
    return batch / reps;
}

// What every measuring step needs: the backend, the options, the copy stream and the sizes
// that fit the arena.
struct Measuring {
    CudaBackend& backend;
    const GpuProfileOptions& options;
    const Stream& stream;
    uint64_t matrix_bytes = 0;
    uint64_t transfer_bytes = 0;

    void step(std::string_view what) const {
        if (options.progress) options.progress(what);
    }
    double time(const std::function<void()>& fn) const { return best_time(fn, options.budget_per_step); }
};

// Device memory read + write rate, as a device-to-device copy.
void measure_read(const Measuring& m, GpuProfile& p) {
    m.step("gpu read");
    Buffer a = m.backend.allocate(m.matrix_bytes, "gpu profile copy source");
    Buffer b = m.backend.allocate(m.matrix_bytes, "gpu profile copy destination");
    CUDA_CHECK(cudaMemsetAsync(a.data(), 1, m.matrix_bytes, m.stream.get()));
    const double s = m.time([&] {
        CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), m.matrix_bytes, cudaMemcpyDeviceToDevice, m.stream.get()));
        m.stream.synchronize();
    });
    p.read_gbs = 2.0 * static_cast<double>(m.matrix_bytes) / s / 1e9;  // read + write
}

// Pinned host <-> device copy rates.
void measure_transfers(const Measuring& m, GpuProfile& p) {
    m.step("host to device");
    PinnedBuffer host(m.transfer_bytes);
    Buffer dev = m.backend.allocate(m.transfer_bytes, "gpu profile transfer");
    const auto copy_seconds = [&](void* to, const void* from, cudaMemcpyKind kind) {
        return m.time([&] {
            CUDA_CHECK(cudaMemcpyAsync(to, from, m.transfer_bytes, kind, m.stream.get()));
            m.stream.synchronize();
        });
    };
    p.h2d_gbs = static_cast<double>(m.transfer_bytes) / copy_seconds(dev.data(), host.data(), cudaMemcpyHostToDevice) / 1e9;
    // Pageable memory (RAM weights that are not registered) goes through the backend's pinned
    // staging chunks: host memcpy and DMA in turn.
    m.step("host to device, staged");
    std::vector<uint8_t> pageable(m.transfer_bytes, 1);
    const Tensor src = Tensor::contiguous(GgmlType::I8, pageable.data(), {static_cast<int64_t>(m.transfer_bytes)});
    Tensor dst = Tensor::contiguous(GgmlType::I8, dev.data(), {static_cast<int64_t>(m.transfer_bytes)},
                                    MemoryKind::Device);
    const double staged = m.time([&] {
        m.backend.copy_in(src, dst);
        m.backend.synchronize();
    });
    p.h2d_staged_gbs = static_cast<double>(m.transfer_bytes) / staged / 1e9;
    m.step("device to host");
    p.d2h_gbs = static_cast<double>(m.transfer_bytes) / copy_seconds(host.data(), dev.data(), cudaMemcpyDeviceToHost) / 1e9;
}

// The executor's small copies (a residual row, a partial sum) go through copy_in and copy_out;
// half a round trip is one copy with its synchronisation.
void measure_transfer_latency(const Measuring& m, GpuProfile& p) {
    m.step("transfer latency");
    std::vector<float> host_in(1024, 0.5f), host_out(1024);
    Tensor src = Tensor::contiguous(GgmlType::F32, host_in.data(), {1024});
    Tensor dst = Tensor::contiguous(GgmlType::F32, host_out.data(), {1024});
    DeviceTensor dev = m.backend.allocate(GgmlType::F32, {1024}, "gpu profile latency");
    const double s = best_time(
        [&] {
            m.backend.copy_in(src, dev.tensor);
            m.backend.copy_out(dev.tensor, dst);
        },
        m.options.budget_per_step / 2);
    p.transfer_latency_us = s / 2 * 1e6;
}

// One small op launched alone and, as a decode step runs with every weight on the GPU, a node of
// a recorded step graph replayed at each token (the recording is made once).
void measure_op_costs(const Measuring& m, GpuProfile& p) {
    m.step("gpu op");
    constexpr int64_t kWidth = 4096;
    constexpr int kReps = 200;
    std::vector<float> host(2 * kWidth);
    for (size_t i = 0; i < host.size(); ++i) host[i] = 0.25f * static_cast<float>(i % 7);
    DeviceTensor ab = m.backend.upload(Tensor::contiguous(GgmlType::F32, host.data(), {kWidth, 2}), "gpu profile op");
    DeviceTensor out = m.backend.allocate(GgmlType::F32, {kWidth}, "gpu profile op output");
    auto* rows = static_cast<float*>(ab.tensor.data);
    const Tensor a1 = Tensor::contiguous(GgmlType::F32, rows, {kWidth}, MemoryKind::Device);
    const Tensor b1 = Tensor::contiguous(GgmlType::F32, rows + kWidth, {kWidth}, MemoryKind::Device);
    const double batch = m.time([&] {
        for (int r = 0; r < kReps; ++r) m.backend.add(a1, b1, out.tensor);
        m.backend.synchronize();
    });
    p.op_us = batch / kReps * 1e6;
    const int32_t token = 0, position = 0;
    const StepGraphId id(&p, 1);
    m.backend.begin_step_graph(id, &token, &position);
    for (int r = 0; r < kReps; ++r) m.backend.add(a1, b1, out.tensor);
    m.backend.end_graph();
    m.backend.synchronize();
    const double graph = m.time([&] {
        if (!m.backend.replay_step(id, token, position)) throw Error("gpu profile: the step graph did not replay");
        m.backend.synchronize();
    });
    p.graph_node_us = graph / kReps * 1e6;
}

// A GEMV over w ([k, n], Q4_K) and its input x: the fixed cost beyond the bytes of products of
// small models' sizes (each slice out of L2 by the time it comes round), then the prefill rate on
// a slice of w, whose output is n_tokens times wider.
void measure_floors_and_prefill(const Measuring& m, const Tensor& w, const Tensor& x, Tensor& y, double gemv_gbs,
                                GpuProfile& p) {
    m.step("gpu gemv floor");
    const int64_t k = w.ne[0], n = w.ne[1];
    const auto floor_us = [&](int64_t slice_rows) {
        const int64_t slice = std::min<int64_t>(n, slice_rows);
        const int64_t n_slices = n / slice;
        Tensor y_slice = Tensor::contiguous(GgmlType::F32, y.data, {slice, 1}, MemoryKind::Device);
        const double batch = m.time([&] {
            for (int64_t i = 0; i < n_slices; ++i) m.backend.matmul(w.rows(i * slice, slice), x, y_slice);
            m.backend.synchronize();
        });
        const double per = batch / static_cast<double>(n_slices);
        const double bytes = static_cast<double>(w.rows(0, slice).n_bytes());
        return std::max(0.0, per - bytes / (gemv_gbs * 1e9)) * 1e6;
    };
    p.gemv_floor_us = floor_us(2048);
    p.gemv_tiny_floor_us = floor_us(256);
    m.step("gpu prefill");
    const int64_t tokens = m.options.prefill_tokens;
    const int64_t rows = std::min<int64_t>(n, 8192);
    DeviceTensor xb = random_input(m.backend, k, tokens);
    DeviceTensor yb = m.backend.allocate(GgmlType::F32, {rows, tokens}, "gpu profile prefill output");
    const double s = matmul_seconds(m.backend, w.rows(0, rows), xb.tensor, yb.tensor, 2, m.options.budget_per_step);
    p.prefill_gflops = 2.0 * static_cast<double>(k * rows * tokens) / s / 1e9;
}

// A GEMV of `type` over a matrix of m.matrix_bytes [4096, n], timed; the buffers stay for the
// floors. UnsupportedError when the backend cannot multiply the type.
struct Gemv {
    DeviceTensor w, x, y;
    double gbs = 0;
};
Gemv timed_gemv(const Measuring& m, GgmlType type) {
    constexpr int64_t k = 4096;
    const int64_t n = std::max<int64_t>(256, static_cast<int64_t>(m.matrix_bytes / row_bytes(type, k)));
    Gemv g{random_matrix(m.backend, m.stream, type, k, n), random_input(m.backend, k, 1),
           m.backend.allocate(GgmlType::F32, {n, 1}, "gpu profile output")};
    const double s = matmul_seconds(m.backend, g.w.tensor, g.x.tensor, g.y.tensor, 10, m.options.budget_per_step);
    g.gbs = static_cast<double>(g.w.tensor.n_bytes()) / s / 1e9;
    return g;
}

// The GEMV rate of each type (a type the backend cannot multiply is left out: the cost model
// falls back to the read rate for it); Q4_K also gives the floors and the prefill rate.
void measure_gemvs(const Measuring& m, GpuProfile& p) {
    for (GgmlType type : m.options.types) {
        const std::string name(type_traits(type).name);
        m.step(cat("gpu gemv ", name));
        try {
            Gemv g = timed_gemv(m, type);
            p.gemv_gbs[name] = g.gbs;
            if (type == GgmlType::Q4_K) measure_floors_and_prefill(m, g.w.tensor, g.x.tensor, g.y.tensor, g.gbs, p);
        } catch (const UnsupportedError&) {
            continue;
        }
    }
}

// The room in the arena for a matrix (or two copy buffers) plus its input and output.
Measuring measuring(CudaBackend& backend, const GpuProfileOptions& options, const Stream& stream) {
    const uint64_t room = backend.arena().largest_free() / 3;
    const Measuring m{backend, options, stream, std::min(options.matrix_bytes, room), std::min(options.transfer_bytes, room)};
    if (m.matrix_bytes < (4ull << 20)) {
        throw BudgetError(cat("cannot profile the GPU: its arena has ", backend.arena().largest_free() >> 20,
                              " MiB free in one block; at least 12 MiB is needed (raise --gpu-mem)"));
    }
    return m;
}

}  // namespace

GpuProfile measure_gpu_profile(CudaBackend& backend, const GpuProfileOptions& options) {
    const int device = backend.options().device;
    CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    GpuProfile p;
    p.name = prop.name;
    p.total_bytes = prop.totalGlobalMem;

    const Stream stream;
    const Measuring m = measuring(backend, options, stream);
    measure_read(m, p);
    measure_transfers(m, p);
    measure_transfer_latency(m, p);
    measure_op_costs(m, p);
    measure_gemvs(m, p);
    backend.synchronize();
    return p;
}

double measure_gpu_gemv_gbs(CudaBackend& backend, GgmlType type, const GpuProfileOptions& options) {
    CUDA_CHECK(cudaSetDevice(backend.options().device));
    const Stream stream;
    const double gbs = timed_gemv(measuring(backend, options, stream), type).gbs;
    backend.synchronize();
    return gbs;
}

}  // namespace strata::cuda
