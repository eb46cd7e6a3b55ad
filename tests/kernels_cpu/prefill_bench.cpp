// Prefill microbenchmark: y [4096, m] = W [4096, 4096] · x at batch m = 32, 128, 512 with W in
// Q4_K. Ours (integer GEMM on Q8_K activations) against oneDNN's matmul on weights dequantized
// from the same Q4_K: f32 and bf16 pre-packed in oneDNN's preferred layout (its best case, at
// 7x / 3.6x the memory of the Q4_K weights), and f32 / bf16 dequantized per call with quant/'s
// reference dequantizer (what an engine that keeps weights quantized pays). Then the backend's
// own choice (CpuBackendOptions::dnnl_min_rows): the integer GEMM against the oneDNN path
// (dnnl_matmul.h, bf16 tiles dequantized per call) at m = 32..512 for W 4096 x 4096 and
// 4096 x 11008, so one run shows the crossover on the machine at hand. Part of
// kernels_cpu_bench; not in ctest.
#include <benchmark/benchmark.h>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels_cpu/cpu_backend.h"
#include "kernels_cpu/cpu_features.h"
#include "kernels_cpu/dnnl_matmul.h"
#include "tests/kernels_cpu/bench_util.h"

#if defined(STRATA_BENCH_DNNL)
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace strata::cpu::bench {
namespace {

using test::HostTensor;

constexpr int64_t kK = 4096, kN = 4096;

// The shared inputs, made once: W quantized, W dequantized [n][k], and 512 rows of x.
struct PrefillInputs {
    HostTensor w = random_block_weights(GgmlType::Q4_K, kK, kN);
    std::vector<float> w_f32 = test::dequantized(w.t);
    HostTensor x = test::random_f32({kK, 512});

    static const PrefillInputs& get() {
        static const PrefillInputs inputs;
        return inputs;
    }
};


void add_rate_counters(benchmark::State& state, int64_t m, int threads) {
    const double iters = static_cast<double>(state.iterations());
    state.counters["flops"] = benchmark::Counter(2.0 * kK * kN * static_cast<double>(m) * iters,
                                                 benchmark::Counter::kIsRate);
    state.counters["tokens"] =
        benchmark::Counter(static_cast<double>(m) * iters, benchmark::Counter::kIsRate);
    state.counters["threads"] = threads;
}

// Args: batch m, n_threads (0 = physical cores).
void bm_prefill_ours(benchmark::State& state) {
    const PrefillInputs& in = PrefillInputs::get();
    const int64_t m = state.range(0);
    CpuBackend backend(threads_arg(state.range(1)));
    set_kernel_variant(KernelVariant::Auto);
    state.SetLabel(std::string(kernel_variant_name(active_kernel_variant())));
    const Tensor x = in.x.t.rows(0, m);
    HostTensor y(GgmlType::F32, {kN, m});
    for (auto _ : state) {
        backend.matmul(in.w.t, x, y.t);
        benchmark::ClobberMemory();
    }
    add_rate_counters(state, m, backend.n_threads());
}

// W [4096, n] in Q4_K for the backend comparison: n = 4096 shares PrefillInputs' matrix.
const HostTensor& backend_weights(int64_t n) {
    if (n == kN) return PrefillInputs::get().w;
    static const HostTensor w11008 = random_block_weights(GgmlType::Q4_K, kK, 11008);
    return w11008;
}

// The backend of a matmul benchmark: ours (dnnl_min_rows = 0), or with `dnnl` the oneDNN path
// from m = 1 on any CPU oneDNN supports; null, the benchmark skipped, where that is missing.
std::unique_ptr<CpuBackend> prefill_backend(benchmark::State& state, bool dnnl, int64_t threads) {
    if (dnnl && !dnnl_matmul_available()) {
        state.SkipWithError("oneDNN path not available (no libdnnl-dev, STRATA_DNNL=0 or no bf16)");
        return nullptr;
    }
    CpuBackendOptions options;
    options.n_threads = threads_arg(threads);
    options.dnnl_min_rows = dnnl ? 1 : 0;
    options.dnnl_require_amx = false;
    set_kernel_variant(KernelVariant::Auto);
    return std::make_unique<CpuBackend>(options);
}

std::string path_label(bool dnnl) {
    return dnnl ? (cpu_features().amx_bf16 ? "onednn bf16 amx" : "onednn bf16 no-amx")
                : std::string(kernel_variant_name(active_kernel_variant()));
}

// Args: W rows n (4096 or 11008), batch m, n_threads (0 = physical cores); ours or oneDNN's.
void bm_prefill_backend(benchmark::State& state, bool dnnl) {
    const PrefillInputs& in = PrefillInputs::get();
    const int64_t n = state.range(0), m = state.range(1);
    const std::unique_ptr<CpuBackend> backend = prefill_backend(state, dnnl, state.range(2));
    if (!backend) return;
    state.SetLabel(path_label(dnnl));
    const HostTensor& w = backend_weights(n);
    const Tensor x = in.x.t.rows(0, m);
    HostTensor y(GgmlType::F32, {n, m});
    for (auto _ : state) {
        backend->matmul(w.t, x, y.t);
        benchmark::ClobberMemory();
    }
    const double iters = static_cast<double>(state.iterations());
    state.counters["flops"] = benchmark::Counter(2.0 * kK * static_cast<double>(n * m) * iters,
                                                 benchmark::Counter::kIsRate);
    state.counters["tokens"] =
        benchmark::Counter(static_cast<double>(m) * iters, benchmark::Counter::kIsRate);
    state.counters["threads"] = backend->n_threads();
}

// Ours against the oneDNN path (from m = 1, AMX not required) on a 4096 x 4096 W of another
// type than q4_K: the i-quants' integer kernels run at a third of q4_K's rate, so oneDNN's
// bf16 GEMM (the same for every type after the dequantization) may win at fewer rows for them.
// Args: type (index into kPrefillTypes), batch m, dnnl (0/1), n_threads.
constexpr GgmlType kPrefillTypes[] = {GgmlType::Q4_K, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,
                                      GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M};
void bm_prefill_type(benchmark::State& state) {
    const GgmlType type = kPrefillTypes[state.range(0)];
    const int64_t m = state.range(1);
    const bool dnnl = state.range(2) != 0;
    const std::unique_ptr<CpuBackend> backend = prefill_backend(state, dnnl, state.range(3));
    if (!backend) return;
    state.SetLabel(cat(type_traits(type).name, " ", path_label(dnnl)));
    const HostTensor w = random_block_weights(type, kK, kN);
    const HostTensor x = test::random_f32({kK, m});
    HostTensor y(GgmlType::F32, {kN, m});
    for (auto _ : state) {
        backend->matmul(w.t, x.t, y.t);
        benchmark::ClobberMemory();
    }
    state.counters["tokens"] =
        benchmark::Counter(static_cast<double>(m) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// Our integer GEMM at one batch over W of k inputs and the same weight count (16M weights:
// [4096 -> 4096], [16384 -> 1024], [28672 -> 585]): the activation rows of a group of 8 outgrow
// L1 from k = 8192 (8 x 320 bytes per 256 inputs), so wide products (a 70B's FFN down) may run
// slower per multiply-add than the profile's [4096 -> n]. from_ram: each call takes the next of
// copies of W that together pass 512 MB, so W streams from RAM as a model's weights do (the
// profile's 9 MiB matrix stays in a server's L3). type: 0 q4_K, 1 q6_K (a Q4_K_M file's ffn_down
// and attn_v in half its layers). Args: k, batch m, from_ram, type, n_threads.
void bm_prefill_width(benchmark::State& state) {
    const int64_t k = state.range(0), m = state.range(1), n = (int64_t{4096} * 4096) / k;
    const bool from_ram = state.range(2) != 0;
    CpuBackend backend(threads_arg(state.range(4)));
    set_kernel_variant(KernelVariant::Auto);
    const HostTensor w = random_block_weights(state.range(3) == 0 ? GgmlType::Q4_K : GgmlType::Q6_K, k, n);
    const size_t copies = from_ram ? (512ull << 20) / w.t.n_bytes() + 1 : 1;
    std::vector<HostTensor> pool(copies - 1, w);
    const HostTensor x = test::random_f32({k, m});
    HostTensor y(GgmlType::F32, {n, m});
    size_t next = 0;
    for (auto _ : state) {
        const size_t i = next++ % copies;
        backend.matmul(i == 0 ? w.t : pool[i - 1].t, x.t, y.t);
        benchmark::ClobberMemory();
    }
    state.counters["flops"] = benchmark::Counter(2.0 * static_cast<double>(k * n * m) *
                                                 static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate);
    state.counters["threads"] = backend.n_threads();
}

// Where W's pages come from: a model's CPU weights are pages of its mapped file (4 KiB each),
// the profile's and the load-time copies' are huge pages (CpuBackend::allocate). A pool of
// copies of W passing 1 GiB, in one region of `kind`: 0 anonymous 4 KiB pages
// (MADV_NOHUGEPAGE), 1 anonymous huge pages (MADV_HUGEPAGE, 2 MiB aligned), 2 a file's pages
// (written to $TMPDIR or /tmp, mapped read-only and shared, as gguf_file maps a model).
class WeightPool {
public:
    WeightPool(const Tensor& w, int kind) : slot_((w.n_bytes() + 4095) / 4096 * 4096) {
        copies_ = (1ull << 30) / slot_ + 1;
        bytes_ = (copies_ * slot_ + (2u << 20) - 1) / (2u << 20) * (2u << 20);
        if (kind == 2) {
            const char* dir = std::getenv("TMPDIR");
            std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/strata-bench-XXXXXX";
            const int fd = ::mkstemp(path.data());
            if (fd < 0) throw std::runtime_error("mkstemp failed");
            ::unlink(path.c_str());
            for (size_t i = 0; i < copies_; ++i) {
                if (::pwrite(fd, w.data, w.n_bytes(), static_cast<off_t>(i * slot_)) !=
                    static_cast<ssize_t>(w.n_bytes())) {
                    ::close(fd);
                    throw std::runtime_error("cannot write the weight file");
                }
            }
            base_ = ::mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd, 0);
            ::close(fd);
            if (base_ == MAP_FAILED) throw std::runtime_error("mmap failed");
            ::madvise(base_, bytes_, MADV_WILLNEED);
        } else {
            base_ = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (base_ == MAP_FAILED) throw std::runtime_error("mmap failed");
            ::madvise(base_, bytes_, kind == 1 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
            for (size_t i = 0; i < copies_; ++i) std::memcpy(slot(i), w.data, w.n_bytes());
        }
        tensor_ = w;
    }
    WeightPool(const WeightPool&) = delete;
    WeightPool& operator=(const WeightPool&) = delete;
    ~WeightPool() { ::munmap(base_, bytes_); }

    Tensor at(size_t i) const {
        Tensor t = tensor_;
        t.data = slot(i % copies_);
        return t;
    }

private:
    uint8_t* slot(size_t i) const { return static_cast<uint8_t*>(base_) + i * slot_; }
    size_t slot_, copies_ = 0, bytes_ = 0;
    void* base_ = nullptr;
    Tensor tensor_;
};

// Our products over W [8192 -> 2048] q4_K from a pool of `kind` pages (WeightPool), one copy a
// call, so the reads go to RAM through that page size: does the page size of a model's mapped
// weights cost what the profile's huge-page matrices do not show? Args: kind, batch m (1: the
// decode GEMV), n_threads.
void bm_weight_pages(benchmark::State& state) {
    constexpr int64_t k = 8192, n = 2048;
    const int64_t m = state.range(1);
    CpuBackend backend(threads_arg(state.range(2)));
    set_kernel_variant(KernelVariant::Auto);
    const HostTensor w = random_block_weights(GgmlType::Q4_K, k, n);
    const WeightPool pool(w.t, static_cast<int>(state.range(0)));
    const HostTensor x = test::random_f32({k, m});
    HostTensor y(GgmlType::F32, {n, m});
    size_t next = 0;
    for (auto _ : state) {
        backend.matmul(pool.at(next++), x.t, y.t);
        benchmark::ClobberMemory();
    }
    const double iters = static_cast<double>(state.iterations());
    state.counters["flops"] = benchmark::Counter(2.0 * static_cast<double>(k * n * m) * iters,
                                                 benchmark::Counter::kIsRate);
    state.counters["bytes"] = benchmark::Counter(static_cast<double>(w.t.n_bytes()) * iters,
                                                 benchmark::Counter::kIsRate);
    state.counters["threads"] = backend.n_threads();
}

#if defined(STRATA_BENCH_DNNL)
enum class DnnlMode { F32Packed, F32Dequant, Bf16Packed, Bf16Dequant };

// dst [m, n] = src [m, k] · wei [k, n]; our W [n][k] row-major is wei in layout "ba".
void bm_prefill_onednn(benchmark::State& state, DnnlMode mode) {
    using dnnl::memory;
    const PrefillInputs& in = PrefillInputs::get();
    const int64_t m = state.range(0);
    const int threads = threads_arg(state.range(1));
    const int saved_threads = omp_get_max_threads();
    omp_set_num_threads(threads);  // oneDNN runs on the OpenMP runtime
    try {
        dnnl::engine eng(dnnl::engine::kind::cpu, 0);
        dnnl::stream stream(eng);
        const bool bf16 = mode == DnnlMode::Bf16Packed || mode == DnnlMode::Bf16Dequant;
        const bool per_call = mode == DnnlMode::F32Dequant || mode == DnnlMode::Bf16Dequant;
        const auto dt = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
        const memory::desc src_f32({m, kK}, memory::data_type::f32, memory::format_tag::ab);
        const memory::desc src_md({m, kK}, dt, memory::format_tag::ab);
        const memory::desc wei_plain({kK, kN}, memory::data_type::f32, memory::format_tag::ba);
        const memory::desc wei_md(
            {kK, kN}, dt, per_call ? memory::format_tag::ba : memory::format_tag::any);
        const memory::desc dst_md({m, kN}, memory::data_type::f32, memory::format_tag::ab);
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_md, dst_md), eng);
        const dnnl::matmul matmul(pd);

        std::vector<float> w_plain(in.w_f32);  // f32 per-call dequantization target
        std::vector<uint16_t> w_bf16(bf16 && per_call ? w_plain.size() : 0);  // bf16 target
        memory wei_src(wei_plain, eng, w_plain.data());
        memory wei(pd.weights_desc(), eng);
        if (mode == DnnlMode::F32Dequant) {
            wei = wei_src;
        } else if (mode == DnnlMode::Bf16Dequant) {
            wei = memory(wei_md, eng, w_bf16.data());
        } else {  // pack once, outside the timing
            dnnl::reorder(wei_src, wei).execute(stream, wei_src, wei);
        }
        memory x_f32(src_f32, eng, const_cast<float*>(in.x.f32()));
        memory src = bf16 ? memory(src_md, eng) : x_f32;
        std::vector<float> y(static_cast<size_t>(m * kN));
        memory dst(dst_md, eng, y.data());
        const TypeTraits& q4k = type_traits(GgmlType::Q4_K);
        const uint64_t w_row = in.w.t.nb[1];
        for (auto _ : state) {
            if (per_call) {  // quant/'s reference dequantizer, one W row per task
#pragma omp parallel for num_threads(threads) schedule(static)
                for (int64_t r = 0; r < kN; ++r) {
                    float* row = w_plain.data() + r * kK;
                    q4k.dequantize(static_cast<const uint8_t*>(in.w.t.data) + r * w_row, row, kK);
                    if (bf16) {
                        for (int64_t e = 0; e < kK; ++e)
                            w_bf16[static_cast<size_t>(r * kK + e)] = fp32_to_bf16(row[e]);
                    }
                }
            }
            if (bf16) dnnl::reorder(x_f32, src).execute(stream, x_f32, src);
            matmul.execute(stream,
                           {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
            stream.wait();
        }
        add_rate_counters(state, m, threads);
        // The ISA oneDNN dispatched to (dnnl_cpu_isa_t bits: 0x1f avx512_core,
        // 0x7f avx512_core_bf16, 0x3ff.. with AMX).
        char label[64];
        std::snprintf(label, sizeof(label), "onednn %d.%d isa=0x%x", DNNL_VERSION_MAJOR,
                      DNNL_VERSION_MINOR, static_cast<unsigned>(dnnl::get_effective_cpu_isa()));
        state.SetLabel(label);
    } catch (const dnnl::error& e) {
        state.SkipWithError(e.what());
    }
    omp_set_num_threads(saved_threads);
}
#endif


}  // namespace
}  // namespace strata::cpu::bench

using namespace strata::cpu::bench;  // NOLINT: benchmark registration only

#define STRATA_PREFILL(...)                                         \
    __VA_ARGS__->ArgNames({"batch", "threads"})                     \
        ->Args({32, 1})                                             \
        ->Args({128, 1})                                            \
        ->Args({512, 1})                                            \
        ->Args({32, 0})                                             \
        ->Args({128, 0})                                            \
        ->Args({512, 0})                                            \
        ->UseRealTime()                                             \
        ->Unit(benchmark::kMillisecond)                             \
        ->ComputeStatistics("min", min_of)                          \
        ->ComputeStatistics("max", max_of)

STRATA_PREFILL(BENCHMARK(bm_prefill_ours));
#if defined(STRATA_BENCH_DNNL)
STRATA_PREFILL(BENCHMARK_CAPTURE(bm_prefill_onednn, f32_packed, DnnlMode::F32Packed));
STRATA_PREFILL(BENCHMARK_CAPTURE(bm_prefill_onednn, f32_dequant_per_call, DnnlMode::F32Dequant));
STRATA_PREFILL(BENCHMARK_CAPTURE(bm_prefill_onednn, bf16_packed, DnnlMode::Bf16Packed));
STRATA_PREFILL(BENCHMARK_CAPTURE(bm_prefill_onednn, bf16_dequant_per_call, DnnlMode::Bf16Dequant));
#endif

// Ours vs the oneDNN path, all threads: {n, m, threads}.
#define STRATA_PREFILL_BACKEND(...)                                                  \
    __VA_ARGS__->ArgNames({"n", "batch", "threads"})                               \
        ->ArgsProduct({{4096, 11008}, {32, 64, 128, 256, 512}, {0}})               \
        ->UseRealTime()                                                            \
        ->Unit(benchmark::kMillisecond)                                            \
        ->ComputeStatistics("min", min_of)                                         \
        ->ComputeStatistics("max", max_of)

STRATA_PREFILL_BACKEND(BENCHMARK_CAPTURE(bm_prefill_backend, ours, false));
STRATA_PREFILL_BACKEND(BENCHMARK_CAPTURE(bm_prefill_backend, dnnl, true));

BENCHMARK(bm_prefill_type)
    ->ArgNames({"type", "m", "dnnl", "threads"})
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {16, 32, 64, 128, 256, 512}, {0, 1}, {0}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

BENCHMARK(bm_prefill_width)
    ->ArgNames({"k", "batch", "from_ram", "type", "threads"})
    ->ArgsProduct({{4096, 8192, 16384, 28672}, {8, 32, 64}, {0, 1}, {0, 1}, {0}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(bm_weight_pages)
    ->ArgNames({"pages", "batch", "threads"})
    ->ArgsProduct({{0, 1, 2}, {1, 8, 64}, {0}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
