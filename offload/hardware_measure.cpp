// The CPU, RAM and attention measurements of the hardware profile (hardware_profile.h); the disk's
// are in disk_profile.cpp, the GPU's in the CUDA backend's profile.
#include "offload/hardware_profile.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/core/host_info.h"
#include "engine/core/timing.h"

namespace strata {

namespace {

// A type's matrix of valid blocks: a few rows quantized from random floats, repeated (the
// bandwidth does not depend on the values, only on their being finite).
void fill_matrix(GgmlType type, int64_t k, int64_t n, uint8_t* data) {
    const TypeTraits& traits = type_traits(type);
    const size_t row = row_bytes(type, k);
    const int64_t n_distinct = std::min<int64_t>(n, 16);
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> values(static_cast<size_t>(k));
    for (int64_t r = 0; r < n_distinct; ++r) {
        uint8_t* dst = data + static_cast<size_t>(r) * row;
        if (traits.quantize != nullptr) {
            for (float& v : values) v = uniform(rng);
            traits.quantize(values.data(), dst, k);
        } else {
            // No reference quantizer (IQ types): random bytes, speed only.
            for (size_t i = 0; i < row; ++i) dst[i] = static_cast<uint8_t>(rng());
        }
    }
#pragma omp parallel for schedule(static)
    for (int64_t r = n_distinct; r < n; ++r) {
        std::memcpy(data + static_cast<size_t>(r) * row,
                    data + static_cast<size_t>(r % n_distinct) * row, row);
    }
}


struct Matmul {
    Buffer w, x, y;
    Tensor tw, tx, ty;
};

Matmul make_matmul(Backend& cpu, GgmlType type, uint64_t weight_bytes, int n_tokens, int64_t k = kPrefillInputs) {
    const size_t row = row_bytes(type, k);
    const int64_t n = std::max<int64_t>(256, static_cast<int64_t>(weight_bytes / row));
    Matmul m;
    m.w = cpu.allocate(row * static_cast<uint64_t>(n), "gemv weights");
    fill_matrix(type, k, n, static_cast<uint8_t*>(m.w.data()));
    m.tw = m.w.tensor(type, {k, n});
    m.x = cpu.allocate(sizeof(float) * k * n_tokens, "gemv input");
    m.tx = m.x.tensor(GgmlType::F32, {k, n_tokens});
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int64_t i = 0; i < k * n_tokens; ++i) m.tx.as<float>()[i] = uniform(rng);
    m.y = cpu.allocate(sizeof(float) * n * n_tokens, "gemv output");
    m.ty = m.y.tensor(GgmlType::F32, {n, n_tokens});
    return m;
}

}  // namespace

// ---- measurements ----

double measure_host_read_gbs(int threads, std::chrono::duration<double> budget, uint64_t max_bytes) {
    threads = std::max(threads, 1);
    const uint64_t ram = host_ram_total_bytes();
    const uint64_t bytes = std::clamp<uint64_t>(std::min(ram / 16, max_bytes), 64ull << 20, 2ull << 30);
    const int64_t n = static_cast<int64_t>(bytes / sizeof(uint64_t));
    const std::unique_ptr<uint64_t[]> data(new uint64_t[static_cast<size_t>(n)]);
    // First touch by the reading threads, so pages sit on their NUMA nodes.
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) data[static_cast<size_t>(i)] = static_cast<uint64_t>(i);
    uint64_t sink = 0;
    const double s = best_time(
        [&] {
            uint64_t sum = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : sum)
            for (int64_t i = 0; i < n; ++i) sum += data[static_cast<size_t>(i)];
            sink += sum;
        },
        budget);
    if (sink == 1) return 0;  // keeps the reads; never true
    return static_cast<double>(bytes) / s / 1e9;
}

double measure_cpu_gemv_gbs(Backend& cpu, GgmlType type, const MatmulMeasureOptions& options) {
    Matmul m = make_matmul(cpu, type, options.weight_bytes, 1);
    const double s = best_time([&] { cpu.matmul(m.tw, m.tx, m.ty); }, options.budget);
    return static_cast<double>(m.tw.n_bytes()) / s / 1e9;
}

OpCosts measure_cpu_op_costs(Backend& cpu, double q4k_gemv_gbs, const MatmulMeasureOptions& options) {
    OpCosts out;
    {
        constexpr int64_t kWidth = 4096;
        constexpr int kReps = 200;
        Buffer buf = cpu.allocate(3 * kWidth * sizeof(float), "op cost rows");
        Tensor a = buf.tensor(GgmlType::F32, {kWidth});
        Tensor b = Tensor::contiguous(GgmlType::F32, a.as<float>() + kWidth, {kWidth});
        Tensor y = Tensor::contiguous(GgmlType::F32, a.as<float>() + 2 * kWidth, {kWidth});
        for (int64_t i = 0; i < 2 * kWidth; ++i) a.as<float>()[i] = 0.25f * static_cast<float>(i % 7);
        const double s = best_time([&] { for (int r = 0; r < kReps; ++r) cpu.add(a, b, y); }, options.budget);
        out.op_us = s / kReps * 1e6;
    }
    // GEMVs of the size of small models' matrices, each on a slice not in the caches.
    Matmul m = make_matmul(cpu, GgmlType::Q4_K, options.weight_bytes, 1);
    const auto floor_us = [&](int64_t slice_rows) {
        const int64_t rows = std::min(slice_rows, m.tw.ne[1]);
        const int64_t n_slices = m.tw.ne[1] / rows;
        Tensor y = Tensor::contiguous(GgmlType::F32, m.ty.as<float>(), {rows, 1});
        const double s = best_time(
            [&] {
                for (int64_t i = 0; i < n_slices; ++i) cpu.matmul(m.tw.rows(i * rows, rows), m.tx, y);
            },
            options.budget);
        const double per_gemv = s / static_cast<double>(n_slices);
        const double bytes = static_cast<double>(m.tw.rows(0, rows).n_bytes());
        const double at_rate = q4k_gemv_gbs > 0 ? bytes / (q4k_gemv_gbs * 1e9) : 0.0;
        return std::max(0.0, per_gemv - at_rate) * 1e6;
    };
    out.gemv_floor_us = floor_us(2048);
    out.gemv_tiny_floor_us = floor_us(256);
    return out;
}


double measure_attention_us(Backend& backend, const AttentionShape& shape, int cells,
                            std::chrono::duration<double> budget) {
    if (attention_key(shape).empty() || shape.n_head % shape.n_head_kv != 0 || cells <= 0) {
        throw ArgumentError(cat("attention shape ", shape.n_head, " heads over ", shape.n_head_kv, " KV heads of ",
                                shape.head_dim, " over ", cells, " cells cannot be measured"));
    }
    constexpr int kReps = 20;
    const int64_t kCells = cells;
    const int64_t kHead = shape.n_head, kHeadKv = shape.n_head_kv, kDim = shape.head_dim;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> q(kDim * kHead), kv(static_cast<size_t>(kDim * kHeadKv * kCells));
    for (float& v : q) v = uniform(rng);
    for (float& v : kv) v = uniform(rng);
    std::vector<uint8_t> kv_f16(row_bytes(GgmlType::F16, kDim * kHeadKv) * kCells);
    type_traits(GgmlType::F16).quantize(kv.data(), kv_f16.data(), static_cast<int64_t>(kv.size()));

    const uint64_t cache_bytes = kv_f16.size();
    Buffer bq = backend.allocate(q.size() * sizeof(float), "attention profile q");
    Buffer bk = backend.allocate(cache_bytes, "attention profile K");
    Buffer bv = backend.allocate(cache_bytes, "attention profile V");
    Buffer bo = backend.allocate(q.size() * sizeof(float), "attention profile output");
    Tensor tq = bq.tensor(GgmlType::F32, {kDim, kHead, 1});
    Tensor tk = bk.tensor(GgmlType::F16, {kDim * kHeadKv, kCells});
    Tensor tv = bv.tensor(GgmlType::F16, {kDim * kHeadKv, kCells});
    Tensor to = bo.tensor(GgmlType::F32, {kDim, kHead, 1});
    backend.copy_in(Tensor::contiguous(GgmlType::F32, q.data(), {kDim, kHead, 1}), tq);
    backend.copy_in(Tensor::contiguous(GgmlType::F16, kv_f16.data(), {kDim * kHeadKv, kCells}), tk);
    backend.copy_in(Tensor::contiguous(GgmlType::F16, kv_f16.data(), {kDim * kHeadKv, kCells}), tv);
    AttentionParams ap;
    ap.n_head = shape.n_head;
    ap.n_head_kv = shape.n_head_kv;
    ap.head_dim_k = ap.head_dim_v = shape.head_dim;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
    const auto position = static_cast<int32_t>(kCells - 1);
    const double s = best_time(
        [&] {
            for (int r = 0; r < kReps; ++r) backend.attention(tq, tk, tv, kCells, &position, ap, to);
            backend.synchronize();
        },
        budget);
    return s / kReps * 1e6;
}

namespace {

// A sample of a prompt-pass rate lasts at least this long: products over consecutive slices
// until it has passed, so it rates what a pass over many matrices sustains rather than the
// luckiest single product (0.3 ms each at 8 tokens on the GPU machine's host). On that host the
// two kinds of sample rated the 70B's CPU passes alike, within its noise between calls (±15%).
constexpr double kPrefillSampleSeconds = 0.02;

// GFLOP/s of `cpu`'s products over `m`'s weights at each of `tokens` (at most m's columns of
// x), a slice of at most kPrefillSliceBytes per product, the next slice each product: the best
// sample (kPrefillSampleSeconds or one product, whichever is longer) within `budget`.
std::vector<double> prefill_gflops(Backend& cpu, Matmul& m, std::initializer_list<int> tokens,
                                   std::chrono::duration<double> budget) {
    const int64_t k = m.tw.ne[0];
    const int64_t row = static_cast<int64_t>(m.tw.n_bytes()) / m.tw.ne[1];
    const int64_t rows = std::clamp<int64_t>(static_cast<int64_t>(kPrefillSliceBytes) / row, 1, m.tw.ne[1]);
    const int64_t n_slices = m.tw.ne[1] / rows;
    std::vector<double> out;
    int64_t next = 0;
    for (const int n : tokens) {
        const Tensor x = Tensor::contiguous(GgmlType::F32, m.tx.as<float>(), {k, n});
        Tensor y = Tensor::contiguous(GgmlType::F32, m.ty.as<float>(), {rows, n});
        const auto sample = [&] {  // FLOPs of the products within one sample
            const auto t = Clock::now();
            int done = 0;
            do {
                cpu.matmul(m.tw.rows((next++ % n_slices) * rows, rows), x, y);
                ++done;
            } while (seconds_since(t) < kPrefillSampleSeconds);
            return 2.0 * static_cast<double>(k * rows) * n * done;
        };
        out.push_back(best_rate(sample, budget) / 1e9);
    }
    return out;
}

}  // namespace

double measure_cpu_prefill_gflops(Backend& cpu, GgmlType type, const MatmulMeasureOptions& options) {
    const int n_tokens = options.n_tokens > 1 ? options.n_tokens : kPrefillBatch;
    Matmul m = make_matmul(cpu, type, options.weight_bytes, n_tokens, options.inputs);
    return prefill_gflops(cpu, m, {n_tokens}, options.budget)[0];
}

namespace {

// cpu_prefill_gflops and its grid, each product over slices of a matrix of options.gemv_bytes
// (read from RAM; a slice per call), half the step budget each.
void measure_cpu_prefill(HardwareProfile& p, Backend& cpu, const CpuProfileOptions& options,
                         const std::function<void(std::string_view)>& step) {
    const auto budget = options.budget_per_step / 2;
    step("cpu prefill q4_K");
    for (const int64_t inputs : {kPrefillInputs, kPrefillWideInputs}) {
        Matmul m = make_matmul(cpu, GgmlType::Q4_K, options.gemv_bytes, kPrefillBatch, inputs);
        const std::vector<double> r = prefill_gflops(cpu, m, {kPrefillBatch, kPrefillSmallBatch}, budget);
        (inputs == kPrefillInputs ? p.cpu_prefill_gflops : p.cpu_prefill_grid.wide) = r[0];
        (inputs == kPrefillInputs ? p.cpu_prefill_grid.small : p.cpu_prefill_grid.small_wide) = r[1];
    }
    for (GgmlType type : options.types) {
        const std::string name(type_traits(type).name);
        if (type == GgmlType::Q4_K || !p.cpu_gemv_gbs.contains(name)) continue;
        step(cat("cpu prefill ", name));
        try {
            p.cpu_prefill_grid.by_type[name] =
                measure_cpu_prefill_gflops(cpu, type, {options.gemv_bytes, kPrefillBatch, budget});
        } catch (const UnsupportedError&) {
            // Left out: q4_K's rate stands for it.
        }
    }
}

}  // namespace

HardwareProfile measure_cpu_profile(Backend& cpu, const CpuProfileOptions& options) {
    const auto step = [&](std::string_view what) {
        if (options.progress) options.progress(what);
    };
    if (cpu.capabilities().host_threads <= 0) {
        throw ArgumentError(cat("measure_cpu_profile: the ", cpu.name(), " backend does not run on the host"));
    }
    HardwareProfile p;
    p.cpu_name = cpu_model_name();
    p.cpu_threads = cpu.capabilities().host_threads;
    p.ram_total_bytes = host_ram_total_bytes();
    step("host read");
    p.host_read_gbs = measure_host_read_gbs(p.cpu_threads, options.budget_per_step, options.gemv_bytes);
    for (GgmlType type : options.types) {
        const std::string name(type_traits(type).name);
        step(cat("cpu gemv ", name));
        try {
            p.cpu_gemv_gbs[name] =
                measure_cpu_gemv_gbs(cpu, type, {options.gemv_bytes, 1, options.budget_per_step});
            p.cpu_gemv_revisions[name] = cpu.capabilities().kernel_revision(type);
        } catch (const UnsupportedError&) {
            // Left out: the cost model falls back to the host read rate for it.
        }
    }
    step("cpu op costs");
    {
        const auto q4k = p.cpu_gemv_gbs.find("q4_K");
        const OpCosts c = measure_cpu_op_costs(cpu, q4k != p.cpu_gemv_gbs.end() ? q4k->second : 0,
                                               {options.gemv_bytes, 1, options.budget_per_step});
        p.cpu_op_us = c.op_us;
        p.cpu_gemv_floor_us = c.gemv_floor_us;
        p.cpu_gemv_tiny_floor_us = c.gemv_tiny_floor_us;
    }
    measure_cpu_prefill(p, cpu, options, step);
    if (!options.disk_path.empty()) {
        step("disk read");
        set_disk(p, measure_disk_read_gbs(options.disk_path, options.disk));
    }
    return p;
}

}  // namespace strata
