// Microbenchmark of the CUDA backend (Google Benchmark, run by hand, not in ctest): decode GEMV
// GB/s at 8192 x 28672 for Q4_K, Q6_K, Q8_0 (and more) and at the 7B decode shapes beside a
// device-to-device copy measured in the same run, a prefill matmul through cuBLAS, decode
// attention over f16/q8_0/q4_0 caches, and a summary table of GB/s / copy.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include "kernels_cpu/cpu_backend.h"
#include "kernels_cuda/cuda_backend.h"
#include "kernels_cuda/device_info.h"
#include "tests/kernels_cpu/test_util.h"

namespace {

using strata::GgmlType;
using strata::Tensor;
using strata::cpu::test::HostTensor;
using strata::cuda::CudaBackend;
using strata::cuda::DeviceTensor;

constexpr int kReps = 20;  // launches per timed batch (one synchronize per batch)
std::map<std::string, double> g_bandwidth;  // GB/s of each benchmark's last run, for the summary

CudaBackend* make_backend(bool quantize_activations, int rows_per_warp) {
    if (strata::cuda::list_devices().empty()) return nullptr;
    strata::cuda::CudaBackendOptions o;
    o.budget_bytes = 4ull << 30;
    o.quantize_activations = quantize_activations;
    o.gemv_rows_per_warp = rows_per_warp;
    return new CudaBackend(o);  // lives until exit
}

// A backend with the default options as `set` changes them, one per key (lives until exit).
template <class F>
CudaBackend* backend_with(const std::string& key, F set) {
    if (strata::cuda::list_devices().empty()) return nullptr;
    static std::map<std::string, CudaBackend*> made;
    CudaBackend*& b = made[key];
    if (b == nullptr) {
        strata::cuda::CudaBackendOptions o;
        o.budget_bytes = 4ull << 30;
        set(o);
        b = new CudaBackend(o);
    }
    return b;
}

// Backends by GEMV variant: rows per warp 1, 2, 4 (q8 activations), and 0 = f32 activations.
CudaBackend* backend(int variant = 2) {
    static CudaBackend* b[5] = {make_backend(false, 1), make_backend(true, 1), make_backend(true, 2), nullptr,
                                make_backend(true, 4)};
    return b[variant];
}

// Random bytes with sane f16 scales: the speed of real weights without minutes of quantizing.
HostTensor random_blocks(GgmlType type, int64_t k, int64_t n) {
    HostTensor w(type, {k, n});
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i + 8 <= w.bytes.size(); i += 8) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        std::memcpy(&w.bytes[i], &s, 8);
    }
    const auto& traits = strata::type_traits(type);
    if (traits.is_quantized) {
        for (uint64_t b = 0; b < w.t.n_bytes() / traits.type_size; ++b) {
            for (size_t off : strata::cpu::test::half_fields(type)) {
                const uint16_t h = strata::fp32_to_fp16(0.01f + 0.001f * static_cast<float>(b % 13));
                std::memcpy(w.bytes.data() + b * traits.type_size + off, &h, sizeof(h));
            }
        }
    }
    return w;
}

template <class F>
void timed_batches(benchmark::State& state, CudaBackend& b, F&& run, double bytes_per_run,
                   const std::string& name) {
    run();  // warm-up: module load, scratch allocation
    b.synchronize();
    double seconds = 0.0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kReps; ++i) run();
        b.synchronize();
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        state.SetIterationTime(dt / kReps);
        seconds += dt;
    }
    const double runs = static_cast<double>(state.iterations()) * kReps;
    g_bandwidth[name] = bytes_per_run * runs / seconds / 1e9;
    state.counters["GB/s"] = g_bandwidth[name];
}

void bm_copy(benchmark::State& state) {
    if (backend() == nullptr) return state.SkipWithError("no CUDA device");
    const int64_t n = 512ll << 20;  // bytes per buffer, far beyond L2
    DeviceTensor a = backend()->allocate(GgmlType::F32, {n / 4}, "copy source");
    DeviceTensor b = backend()->allocate(GgmlType::F32, {n / 4}, "copy destination");
    cudaMemset(a.buffer.data(), 1, static_cast<size_t>(n));
    // The copy runs on the legacy stream; synchronize() of the backend does not cover it, so
    // the batch ends with a device synchronize instead.
    auto run = [&] { cudaMemcpyAsync(b.buffer.data(), a.buffer.data(), static_cast<size_t>(n), cudaMemcpyDeviceToDevice); };
    run();
    cudaDeviceSynchronize();
    double seconds = 0.0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kReps; ++i) run();
        cudaDeviceSynchronize();
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        state.SetIterationTime(dt / kReps);
        seconds += dt;
    }
    const double runs = static_cast<double>(state.iterations()) * kReps;
    g_bandwidth["copy"] = 2.0 * static_cast<double>(n) * runs / seconds / 1e9;  // read + write
    state.counters["GB/s"] = g_bandwidth["copy"];
}

// One weight matrix per (variant, type), made once: random bytes are cheap, uploads are not.
const DeviceTensor& weights(CudaBackend& b, int variant, GgmlType type, int64_t k, int64_t n) {
    static std::map<std::tuple<int, GgmlType, int64_t, int64_t>, DeviceTensor> cache;
    const auto key = std::make_tuple(variant, type, k, n);
    auto it = cache.find(key);
    if (it == cache.end()) {
        const HostTensor w = random_blocks(type, k, n);
        it = cache.emplace(key, b.upload(w.t, "bench weights")).first;
    }
    return it->second;
}

// y [n, m] = W [k, n] · x [k, m] on the backend of `variant`; bytes = weights + x + y.
void bm_matmul(benchmark::State& state, GgmlType type, int64_t m, int variant, int64_t k = 8192, int64_t n = 28672) {
    CudaBackend* b = backend(variant);
    if (b == nullptr) return state.SkipWithError("no CUDA device");
    const DeviceTensor& wd = weights(*b, variant, type, k, n);
    DeviceTensor xd = b->upload(strata::cpu::test::random_f32({k, m}).t, "bench x");
    DeviceTensor yd = b->allocate(GgmlType::F32, {n, m});
    const double bytes = static_cast<double>(wd.tensor.n_bytes()) + 4.0 * static_cast<double>((k + n) * m);
    const std::string name = std::string(strata::type_traits(type).name) + " " + std::to_string(k) + "x" +
                             std::to_string(n) + " m=" + std::to_string(m) +
                             (variant == 0 ? " f32 x" : " q8 x, rows/warp " + std::to_string(variant));
    timed_batches(state, *b, [&] { b->matmul(wd.tensor, xd.tensor, yd.tensor); }, bytes, name);
    if (m > 8) state.counters["TFLOP/s"] = 2.0 * k * n * m * g_bandwidth[name] * 1e9 / bytes / 1e12;
}

// Decode GEMV at the 7B shapes, m tokens (one, or a batched step of m sequences), y = W [k, n] · x:
// enough copies of W to pass 240 MB (4x the L2) are cycled, so every launch reads its weights from
// HBM as a decode step does.
// mma: the int8 tensor-core kernel for 2-8 tokens (gemv_mma_min_tokens = 2), else dp4a.
void bm_gemv_decode(benchmark::State& state, GgmlType type, int64_t k, int64_t n, int variant = 4, int64_t m = 1,
                    bool mma = false) {
    CudaBackend* b = mma ? backend_with("mma", [](strata::cuda::CudaBackendOptions& o) { o.gemv_mma_min_tokens = 2; })
                         : backend(variant);  // 4: the default options
    if (b == nullptr) return state.SkipWithError("no CUDA device");
    const HostTensor w = random_blocks(type, k, n);
    const int copies = static_cast<int>(240e6 / static_cast<double>(w.t.n_bytes())) + 1;
    std::vector<DeviceTensor> ws;
    for (int i = 0; i < copies; ++i) ws.push_back(b->upload(w.t, "bench weights"));
    DeviceTensor xd = b->upload(strata::cpu::test::random_f32({k, m}).t, "bench x");
    DeviceTensor yd = b->allocate(GgmlType::F32, {n, m});
    const double bytes = static_cast<double>(w.t.n_bytes()) + 4.0 * static_cast<double>((k + n) * m);
    const std::string name = std::string(strata::type_traits(type).name) + " " + std::to_string(k) + "x" +
                             std::to_string(n) + " m=" + std::to_string(m) +
                             (variant == 4 ? "" : ", rows/warp " + std::to_string(variant)) + (mma ? " mma" : "");
    int next = 0;
    timed_batches(state, *b, [&] { b->matmul(ws[static_cast<size_t>(next++ % copies)].tensor, xd.tensor, yd.tensor); },
                  bytes, name);
}

// Decode attention of n_head query heads over n_head_kv kv heads of head dim `dim` (by default
// the Llama-2-7B shape, 32 over 32 of 128) over `cells` cells of an f16 or q8_0 cache: 20
// attentions recorded as one step graph and replayed, so the time is the GPU's, not the
// launches'. Reported per attention; GB/s counts the K and V bytes read.
void bm_attention_decode(benchmark::State& state, GgmlType kv_type, int64_t cells, int blocks_per_sm = 0,
                         int n_head = 32, int n_head_kv = 32, int dim = 128, int split_cells = 0) {
    const auto set = [&](strata::cuda::CudaBackendOptions& o) {
        if (blocks_per_sm > 0) o.attention_decode_blocks_per_sm = blocks_per_sm;
        o.attention_decode_split_cells = split_cells;
    };
    CudaBackend* b = blocks_per_sm > 0 || split_cells > 0
                         ? backend_with("blocks " + std::to_string(blocks_per_sm) + ", split " + std::to_string(split_cells), set)
                         : backend(4);
    if (b == nullptr) return state.SkipWithError("no CUDA device");
    constexpr int kPerGraph = 20;
    const int64_t row = dim * n_head_kv;
    HostTensor kc(kv_type, {row, cells}), vc(kv_type, {row, cells});
    strata::cpu::CpuBackend cpu(0);
    cpu.kv_store(strata::cpu::test::random_f32({row, cells}, -2.0f, 2.0f).t, kc.t, 0);
    cpu.kv_store(strata::cpu::test::random_f32({row, cells}, -2.0f, 2.0f).t, vc.t, 0);
    DeviceTensor kd = b->upload(kc.t, "bench k"), vd = b->upload(vc.t, "bench v");
    DeviceTensor qd = b->upload(strata::cpu::test::random_f32({dim, n_head, 1}).t, "bench q");
    DeviceTensor od = b->allocate(GgmlType::F32, {dim, n_head, 1});
    strata::AttentionParams p;
    p.n_head = n_head;
    p.n_head_kv = n_head_kv;
    p.head_dim_k = p.head_dim_v = dim;
    p.scale = 0.088f;
    const int32_t token = 0, pos = static_cast<int32_t>(cells - 1);
    b->begin_step_graph(b, &token, &pos);
    for (int i = 0; i < kPerGraph; ++i) b->attention(qd.tensor, kd.tensor, vd.tensor, cells, &pos, p, od.tensor);
    b->end_graph();
    const double bytes = 2.0 * static_cast<double>(kc.t.n_bytes()) * kPerGraph;
    const std::string name = std::string("attention ") + std::string(strata::type_traits(kv_type).name) + " " +
                             std::to_string(cells) + " cells, x" + std::to_string(kPerGraph) +
                             (blocks_per_sm > 0 ? ", " + std::to_string(blocks_per_sm) + " blocks/SM" : "") +
                             (n_head != n_head_kv ? ", " + std::to_string(n_head) + "/" + std::to_string(n_head_kv) + " heads" : "") +
                             (dim != 128 ? ", dim " + std::to_string(dim) : "") +
                             (split_cells > 0 ? ", splits of " + std::to_string(split_cells) + "+" : "");
    timed_batches(state, *b, [&] { b->replay_step(b, token, pos); }, bytes, name);
    state.counters["us/attention"] = bytes / (g_bandwidth[name] * 1e9) / kPerGraph * 1e6;
}

// Prefill attention of the Llama-2-7B shape (32 heads, head dim 128): a prompt of `tokens`
// tokens at positions 0.., causal, over an f16 or q8_0 cache, on tensor cores or the f32 tiled
// kernel. TFLOP/s counts the causal half of QKᵀ and PV (4·d·Σ visible cells per head).
void bm_attention_prefill(benchmark::State& state, GgmlType kv_type, int64_t tokens, bool tensor_cores) {
    CudaBackend* b = backend_with(tensor_cores ? "tensor cores" : "f32 tiled", [&](strata::cuda::CudaBackendOptions& o) {
        o.attention_tensor_cores = tensor_cores;
    });
    if (b == nullptr) return state.SkipWithError("no CUDA device");
    constexpr int kHeads = 32, kDim = 128;
    HostTensor kc(kv_type, {kDim * kHeads, tokens}), vc(kv_type, {kDim * kHeads, tokens});
    strata::cpu::CpuBackend cpu(0);
    cpu.kv_store(strata::cpu::test::random_f32({kDim * kHeads, tokens}, -2.0f, 2.0f).t, kc.t, 0);
    cpu.kv_store(strata::cpu::test::random_f32({kDim * kHeads, tokens}, -2.0f, 2.0f).t, vc.t, 0);
    DeviceTensor kd = b->upload(kc.t, "bench k"), vd = b->upload(vc.t, "bench v");
    DeviceTensor qd = b->upload(strata::cpu::test::random_f32({kDim, kHeads, tokens}).t, "bench q");
    DeviceTensor od = b->allocate(GgmlType::F32, {kDim, kHeads, tokens});
    strata::AttentionParams p;
    p.n_head = p.n_head_kv = kHeads;
    p.head_dim_k = p.head_dim_v = kDim;
    p.scale = 0.088f;
    std::vector<int32_t> pos(static_cast<size_t>(tokens));
    for (int64_t t = 0; t < tokens; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(t);
    const double flops = 4.0 * kDim * kHeads * static_cast<double>(tokens) * static_cast<double>(tokens + 1) / 2.0;
    const double bytes = 2.0 * static_cast<double>(kc.t.n_bytes()) + 8.0 * kDim * kHeads * static_cast<double>(tokens);
    const std::string name = std::string("attention prefill ") + std::string(strata::type_traits(kv_type).name) + " " +
                             std::to_string(tokens) + (tensor_cores ? " tokens, tensor cores" : " tokens, f32 tiled");
    timed_batches(state, *b, [&] { b->attention(qd.tensor, kd.tensor, vd.tensor, tokens, pos.data(), p, od.tensor); },
                  bytes, name);
    state.counters["TFLOP/s"] = flops * g_bandwidth[name] * 1e9 / bytes / 1e12;
}

// One decode FFN of the Llama-2-7B shape (n_embd 4096, n_ff 11008; gate and up Q4_K, down Q6_K),
// dense (gate and up GEMVs, gated activation, down GEMV) against sparse at half the neurons
// active (gate GEMV, then sparse_gated_ffn over a neuron-major down_t of `down_type`, counts on
// the device as in a decode graph). The threshold is the median |silu(gate)| of this x. The
// matrices (87-92 MB) exceed the 50 MB L2. Reported per FFN.
void bm_ffn_decode(benchmark::State& state, bool sparse, GgmlType down_type) {
    CudaBackend* b = backend(4);
    if (b == nullptr) return state.SkipWithError("no CUDA device");
    const int64_t n_embd = 4096, n_ff = 11008;
    const HostTensor gate_h = random_blocks(GgmlType::Q4_K, n_embd, n_ff), up_h = random_blocks(GgmlType::Q4_K, n_embd, n_ff);
    const HostTensor down_h = random_blocks(GgmlType::Q6_K, n_ff, n_embd), down_t_h = random_blocks(down_type, n_embd, n_ff);
    DeviceTensor gw = b->upload(gate_h.t, "bench gate"), uw = b->upload(up_h.t, "bench up");
    DeviceTensor dw = b->upload(down_h.t, "bench down"), dtw = b->upload(down_t_h.t, "bench down_t");
    DeviceTensor x = b->upload(strata::cpu::test::random_f32({n_embd, 1}).t, "bench x");
    DeviceTensor g = b->allocate(GgmlType::F32, {n_ff, 1}), u = b->allocate(GgmlType::F32, {n_ff, 1});
    DeviceTensor y = b->allocate(GgmlType::F32, {n_embd, 1});
    HostTensor zero(GgmlType::I64, {2});
    std::memset(zero.t.data, 0, 16);
    DeviceTensor counts = b->upload(zero.t, "bench counts");
    b->matmul(gw.tensor, x.tensor, g.tensor);
    HostTensor gh(GgmlType::F32, {n_ff, 1});
    b->download(g.tensor, gh.t);
    std::vector<float> mags(static_cast<size_t>(n_ff));
    for (int64_t i = 0; i < n_ff; ++i) mags[static_cast<size_t>(i)] = std::fabs(gh.f32()[i] / (1.0f + std::exp(-gh.f32()[i])));
    std::nth_element(mags.begin(), mags.begin() + n_ff / 2, mags.end());
    strata::SparseFfnArgs args{&g.tensor, &x.tensor, &uw.tensor, &dtw.tensor, strata::Activation::Silu, mags[static_cast<size_t>(n_ff / 2)]};
    args.counts = static_cast<uint64_t*>(counts.tensor.data);
    auto run = [&] {
        b->matmul(gw.tensor, x.tensor, g.tensor);
        if (sparse) {
            b->sparse_gated_ffn(args, y.tensor);
            return;
        }
        b->matmul(uw.tensor, x.tensor, u.tensor);
        b->gated_activation(g.tensor, u.tensor, strata::Activation::Silu, g.tensor);
        b->matmul(dw.tensor, g.tensor, y.tensor);
    };
    const double bytes = static_cast<double>(gw.tensor.n_bytes()) +
                         (sparse ? 0.5 * static_cast<double>(uw.tensor.n_bytes() + dtw.tensor.n_bytes())
                                 : static_cast<double>(uw.tensor.n_bytes() + dw.tensor.n_bytes()));
    const std::string name =
        sparse ? "ffn 7B sparse 0.5, down_t " + std::string(strata::type_traits(down_type).name) : "ffn 7B dense";
    timed_batches(state, *b, run, bytes, name);
    state.counters["us/ffn"] = bytes / (g_bandwidth[name] * 1e9) * 1e6;
}

}  // namespace

BENCHMARK_CAPTURE(bm_ffn_decode, dense, false, GgmlType::Q8_0)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_ffn_decode, sparse_q8_0, true, GgmlType::Q8_0)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_ffn_decode, sparse_q4_0, true, GgmlType::Q4_0)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_copy)->UseManualTime()->Unit(benchmark::kMicrosecond);
#define STRATA_GEMV_BENCH(tag, type, m, variant) \
    BENCHMARK_CAPTURE(bm_matmul, tag, type, m, variant)->UseManualTime()->Unit(benchmark::kMicrosecond)
STRATA_GEMV_BENCH(q4_K_r1, GgmlType::Q4_K, 1, 1);
STRATA_GEMV_BENCH(q4_K_r2, GgmlType::Q4_K, 1, 2);
STRATA_GEMV_BENCH(q4_K_r4, GgmlType::Q4_K, 1, 4);
STRATA_GEMV_BENCH(q6_K_r1, GgmlType::Q6_K, 1, 1);
STRATA_GEMV_BENCH(q6_K_r2, GgmlType::Q6_K, 1, 2);
STRATA_GEMV_BENCH(q8_0_r1, GgmlType::Q8_0, 1, 1);
STRATA_GEMV_BENCH(q8_0_r2, GgmlType::Q8_0, 1, 2);
STRATA_GEMV_BENCH(q4_0_r2, GgmlType::Q4_0, 1, 2);
STRATA_GEMV_BENCH(q4_0_r4, GgmlType::Q4_0, 1, 4);
STRATA_GEMV_BENCH(q5_K_r2, GgmlType::Q5_K, 1, 2);
STRATA_GEMV_BENCH(q5_K_r4, GgmlType::Q5_K, 1, 4);
STRATA_GEMV_BENCH(q4_K_m4_r2, GgmlType::Q4_K, 4, 2);
STRATA_GEMV_BENCH(q4_K_f32x, GgmlType::Q4_K, 1, 0);
STRATA_GEMV_BENCH(f16, GgmlType::F16, 1, 0);
STRATA_GEMV_BENCH(q4_K_prefill512, GgmlType::Q4_K, 512, 2);
// The 7B shape's prefill products (dequantized f16 tiles through cuBLAS).
#define STRATA_PREFILL_BENCH(tag, type, k, n) \
    BENCHMARK_CAPTURE(bm_matmul, tag, type, 512, 2, k, n)->UseManualTime()->Unit(benchmark::kMicrosecond)
STRATA_PREFILL_BENCH(q4_K_4096x11008_prefill512, GgmlType::Q4_K, 4096, 11008);
STRATA_PREFILL_BENCH(q4_K_11008x4096_prefill512, GgmlType::Q4_K, 11008, 4096);
STRATA_PREFILL_BENCH(q6_K_11008x4096_prefill512, GgmlType::Q6_K, 11008, 4096);
STRATA_PREFILL_BENCH(q6_K_4096x4096_prefill512, GgmlType::Q6_K, 4096, 4096);
STRATA_PREFILL_BENCH(f16_11008x4096_prefill512, GgmlType::F16, 11008, 4096);
#define STRATA_DECODE_BENCH(tag, type, k, n) \
    BENCHMARK_CAPTURE(bm_gemv_decode, tag, type, k, n)->UseManualTime()->Unit(benchmark::kMicrosecond)
STRATA_DECODE_BENCH(q4_K_4096x4096, GgmlType::Q4_K, 4096, 4096);
STRATA_DECODE_BENCH(q4_K_4096x11008, GgmlType::Q4_K, 4096, 11008);
STRATA_DECODE_BENCH(q4_K_11008x4096, GgmlType::Q4_K, 11008, 4096);
STRATA_DECODE_BENCH(q6_K_4096x4096, GgmlType::Q6_K, 4096, 4096);
STRATA_DECODE_BENCH(q6_K_11008x4096, GgmlType::Q6_K, 11008, 4096);
STRATA_DECODE_BENCH(q6_K_4096x32000, GgmlType::Q6_K, 4096, 32000);
STRATA_DECODE_BENCH(q8_0_4096x4096, GgmlType::Q8_0, 4096, 4096);
STRATA_DECODE_BENCH(q8_0_4096x11008, GgmlType::Q8_0, 4096, 11008);
#define STRATA_DECODE_BENCH_R(tag, type, k, n, r) \
    BENCHMARK_CAPTURE(bm_gemv_decode, tag, type, k, n, r)->UseManualTime()->Unit(benchmark::kMicrosecond)
STRATA_DECODE_BENCH_R(q4_K_4096x4096_r1, GgmlType::Q4_K, 4096, 4096, 1);
STRATA_DECODE_BENCH_R(q4_K_4096x4096_r2, GgmlType::Q4_K, 4096, 4096, 2);
STRATA_DECODE_BENCH_R(q4_K_4096x11008_r1, GgmlType::Q4_K, 4096, 11008, 1);
STRATA_DECODE_BENCH_R(q4_K_4096x11008_r2, GgmlType::Q4_K, 4096, 11008, 2);
STRATA_DECODE_BENCH_R(q4_K_11008x4096_r2, GgmlType::Q4_K, 11008, 4096, 2);
STRATA_DECODE_BENCH_R(q6_K_4096x4096_r1, GgmlType::Q6_K, 4096, 4096, 1);
// The batched decode step of several sequences (strata serve, bench --parallel) at the same
// shapes: dp4a, and int8 tensor cores (_mma).
#define STRATA_DECODE_BENCH_M(tag, type, k, n, m, mma) \
    BENCHMARK_CAPTURE(bm_gemv_decode, tag, type, k, n, 4, m, mma)->UseManualTime()->Unit(benchmark::kMicrosecond)
STRATA_DECODE_BENCH_M(q4_K_4096x11008_m2, GgmlType::Q4_K, 4096, 11008, 2, false);
STRATA_DECODE_BENCH_M(q4_K_4096x11008_m4, GgmlType::Q4_K, 4096, 11008, 4, false);
STRATA_DECODE_BENCH_M(q4_K_4096x11008_m8, GgmlType::Q4_K, 4096, 11008, 8, false);
STRATA_DECODE_BENCH_M(q4_K_4096x11008_m5, GgmlType::Q4_K, 4096, 11008, 5, false);
STRATA_DECODE_BENCH_M(q4_K_4096x11008_m5_mma, GgmlType::Q4_K, 4096, 11008, 5, true);
STRATA_DECODE_BENCH_M(q4_K_4096x11008_m2_mma, GgmlType::Q4_K, 4096, 11008, 2, true);
STRATA_DECODE_BENCH_M(q4_K_4096x11008_m4_mma, GgmlType::Q4_K, 4096, 11008, 4, true);
STRATA_DECODE_BENCH_M(q4_K_4096x11008_m8_mma, GgmlType::Q4_K, 4096, 11008, 8, true);
STRATA_DECODE_BENCH_M(q4_K_11008x4096_m8, GgmlType::Q4_K, 11008, 4096, 8, false);
STRATA_DECODE_BENCH_M(q4_K_11008x4096_m8_mma, GgmlType::Q4_K, 11008, 4096, 8, true);
STRATA_DECODE_BENCH_M(q6_K_11008x4096_m8, GgmlType::Q6_K, 11008, 4096, 8, false);
STRATA_DECODE_BENCH_M(q6_K_11008x4096_m8_mma, GgmlType::Q6_K, 11008, 4096, 8, true);
STRATA_DECODE_BENCH_M(q4_K_4096x4096_m8, GgmlType::Q4_K, 4096, 4096, 8, false);
STRATA_DECODE_BENCH_M(q4_K_4096x4096_m8_mma, GgmlType::Q4_K, 4096, 4096, 8, true);
STRATA_DECODE_BENCH_M(q6_K_4096x32000_m8, GgmlType::Q6_K, 4096, 32000, 8, false);
STRATA_DECODE_BENCH_M(q6_K_4096x32000_m8_mma, GgmlType::Q6_K, 4096, 32000, 8, true);
// Other codecs through the tensor-core kernel (its register use differs per codec).
STRATA_DECODE_BENCH_M(q4_0_4096x11008_m8_mma, GgmlType::Q4_0, 4096, 11008, 8, true);
STRATA_DECODE_BENCH_M(q5_K_4096x11008_m8_mma, GgmlType::Q5_K, 4096, 11008, 8, true);
STRATA_DECODE_BENCH_M(q8_0_4096x11008_m8_mma, GgmlType::Q8_0, 4096, 11008, 8, true);
STRATA_DECODE_BENCH_M(iq3_xxs_4096x11008_m8_mma, GgmlType::IQ3_XXS, 4096, 11008, 8, true);
STRATA_DECODE_BENCH_M(iq2_s_4096x11008_m8_mma, GgmlType::IQ2_S, 4096, 11008, 8, true);
// One row per warp at 8 tokens (the kernel before 2 rows shared each activation load there).
#define STRATA_DECODE_BENCH_M_R1(tag, type, k, n, m) \
    BENCHMARK_CAPTURE(bm_gemv_decode, tag, type, k, n, 1, m)->UseManualTime()->Unit(benchmark::kMicrosecond)
STRATA_DECODE_BENCH_M_R1(q4_K_4096x11008_m8_r1, GgmlType::Q4_K, 4096, 11008, 8);
STRATA_DECODE_BENCH_M_R1(q4_K_11008x4096_m8_r1, GgmlType::Q4_K, 11008, 4096, 8);
STRATA_DECODE_BENCH_M_R1(q6_K_11008x4096_m8_r1, GgmlType::Q6_K, 11008, 4096, 8);
STRATA_DECODE_BENCH_M_R1(q4_K_4096x4096_m8_r1, GgmlType::Q4_K, 4096, 4096, 8);
STRATA_DECODE_BENCH_M_R1(q6_K_4096x32000_m8_r1, GgmlType::Q6_K, 4096, 32000, 8);
#define STRATA_ATTN_BENCH(tag, type, cells) \
    BENCHMARK_CAPTURE(bm_attention_decode, tag, type, cells)->UseManualTime()->Unit(benchmark::kMicrosecond)
STRATA_ATTN_BENCH(f16_16, GgmlType::F16, 16);
STRATA_ATTN_BENCH(f16_256, GgmlType::F16, 256);
STRATA_ATTN_BENCH(f16_4096, GgmlType::F16, 4096);
STRATA_ATTN_BENCH(f16_32768, GgmlType::F16, 32768);
STRATA_ATTN_BENCH(q8_0_4096, GgmlType::Q8_0, 4096);
STRATA_ATTN_BENCH(q4_0_4096, GgmlType::Q4_0, 4096);
STRATA_ATTN_BENCH(q8_0_32768, GgmlType::Q8_0, 32768);
STRATA_ATTN_BENCH(q8_0_8192, GgmlType::Q8_0, 8192);
STRATA_ATTN_BENCH(f16_8192, GgmlType::F16, 8192);
#define STRATA_ATTN_BLOCKS_BENCH(tag, type, cells, blocks) \
    BENCHMARK_CAPTURE(bm_attention_decode, tag, type, cells, blocks)->UseManualTime()->Unit(benchmark::kMicrosecond)
STRATA_ATTN_BLOCKS_BENCH(q8_0_8192_b4, GgmlType::Q8_0, 8192, 4);
STRATA_ATTN_BLOCKS_BENCH(q8_0_8192_b16, GgmlType::Q8_0, 8192, 16);
STRATA_ATTN_BLOCKS_BENCH(f16_8192_b4, GgmlType::F16, 8192, 4);
STRATA_ATTN_BLOCKS_BENCH(f16_8192_b16, GgmlType::F16, 8192, 16);
// Grouped-query shapes: Llama-3-8B (32 query heads over 8 kv heads) and Llama-2-70B (64 over 8).
#define STRATA_ATTN_GQA_BENCH(tag, type, cells, heads, kv_heads)                               \
    BENCHMARK_CAPTURE(bm_attention_decode, tag, type, cells, 0, heads, kv_heads)->UseManualTime() \
        ->Unit(benchmark::kMicrosecond)
STRATA_ATTN_GQA_BENCH(q8_0_8192_g4, GgmlType::Q8_0, 8192, 32, 8);
STRATA_ATTN_GQA_BENCH(f16_8192_g4, GgmlType::F16, 8192, 32, 8);
STRATA_ATTN_GQA_BENCH(q8_0_8192_g8, GgmlType::Q8_0, 8192, 64, 8);
STRATA_ATTN_GQA_BENCH(f16_8192_g8, GgmlType::F16, 8192, 64, 8);
// Gemma 3 270M's attention (4 query heads over 1 kv head of dim 256) at a chat's short spans:
// a few blocks, bound by latency, not bytes; llama.cpp's whole attention is one block per head
// group there (BENCHMARKS.md, twenty-third session). us/attention is the number to watch.
// split: a split's fewest keys (0: the backend's rule, 16 at this head dim; 32: the rule for head
// dims up to 128).
#define STRATA_ATTN_SMALL_BENCH(tag, type, cells, split)                                              \
    BENCHMARK_CAPTURE(bm_attention_decode, tag, type, cells, 0, 4, 1, 256, split)->UseManualTime() \
        ->Unit(benchmark::kMicrosecond)
STRATA_ATTN_SMALL_BENCH(g270_f16_32, GgmlType::F16, 32, 0);
STRATA_ATTN_SMALL_BENCH(g270_f16_64, GgmlType::F16, 64, 0);
STRATA_ATTN_SMALL_BENCH(g270_f16_128, GgmlType::F16, 128, 0);
STRATA_ATTN_SMALL_BENCH(g270_f16_256, GgmlType::F16, 256, 0);
STRATA_ATTN_SMALL_BENCH(g270_f16_1024, GgmlType::F16, 1024, 0);
STRATA_ATTN_SMALL_BENCH(g270_f16_64_s32, GgmlType::F16, 64, 32);
STRATA_ATTN_SMALL_BENCH(g270_f16_128_s32, GgmlType::F16, 128, 32);
STRATA_ATTN_SMALL_BENCH(g270_f16_256_s32, GgmlType::F16, 256, 32);
#define STRATA_PREFILL_ATTN_BENCH(tag, type, tokens, tc) \
    BENCHMARK_CAPTURE(bm_attention_prefill, tag, type, tokens, tc)->UseManualTime()->Unit(benchmark::kMicrosecond)
STRATA_PREFILL_ATTN_BENCH(f16_512_tiled, GgmlType::F16, 512, false);
STRATA_PREFILL_ATTN_BENCH(f16_512_mma, GgmlType::F16, 512, true);
STRATA_PREFILL_ATTN_BENCH(q8_0_512_mma, GgmlType::Q8_0, 512, true);
STRATA_PREFILL_ATTN_BENCH(f16_4096_mma, GgmlType::F16, 4096, true);

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    if (g_bandwidth.count("copy") == 0) return 0;
    const double copy = g_bandwidth["copy"];
    std::printf("\n| benchmark (8192 x 28672 unless named) | GB/s | of copy |\n| --- | ---: | ---: |\n");
    std::printf("| device-to-device copy (read + write) | %.0f | 100%% |\n", copy);
    for (const auto& [name, gbs] : g_bandwidth) {
        if (name != "copy") std::printf("| %s | %.0f | %.0f%% |\n", name.c_str(), gbs, 100.0 * gbs / copy);
    }
    return 0;
}
