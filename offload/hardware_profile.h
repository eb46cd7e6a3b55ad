// HardwareProfile: the measured speeds of one machine that the cost model turns into seconds
// per token, its JSON file (cached per user, refreshed when the CPU or GPU changes) and the
// CPU-side measurements (the disk's in disk_profile.h). GPU numbers are filled in by the caller
// (kernels_cuda measures them); offload/ never touches CUDA. Every rate is in GB/s or GFLOP/s
// with G = 1e9.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/host_info.h"
#include "offload/disk_profile.h"
#include "quant/ggml_type.h"

namespace strata {

class Backend;

// The shapes of the CPU's prompt-pass rates. A product's rate falls with its width (a group's
// activation rows outgrow L1: q4_K 28% slower at 28672 inputs than at 4096 on the GPU machine's
// host) and at few tokens (the weights' reads show), and differs by type (q6_K 10-16% below
// q4_K); one 4096-wide q4_K rate made a 70B's CPU passes 25-52% optimistic.
constexpr int64_t kPrefillInputs = 4096;
constexpr int64_t kPrefillWideInputs = 28672;
constexpr int kPrefillBatch = 64;
constexpr int kPrefillSmallBatch = 8;

// The CPU's prompt-pass rates beside cpu_prefill_gflops (q4_K, kPrefillInputs wide,
// kPrefillBatch tokens), GFLOP/s, weights read from RAM as a model's are: q4_K wide, at a small
// batch, both; and each other profiled type narrow at the full batch. 0 / absent: not measured
// (cpu_prefill_rate then keeps cpu_prefill_gflops there).
struct CpuPrefillGrid {
    double wide = 0;
    double small = 0;
    double small_wide = 0;
    std::map<std::string, double> by_type;  // ggml type name -> GFLOP/s
    bool operator==(const CpuPrefillGrid&) const = default;
};
// FLOP/s of a CPU product of `type` (a ggml type name), `inputs` wide, over `tokens` tokens:
// bilinear in log2(inputs) between kPrefillInputs and kPrefillWideInputs and in log2(tokens)
// between kPrefillSmallBatch and kPrefillBatch (clamped outside), scaled by the type's rate over
// q4_K's. `gflops` is cpu_prefill_gflops.
double cpu_prefill_rate(double gflops, const CpuPrefillGrid& grid, std::string_view type, int64_t inputs,
                        double tokens);

// The CPU's rates at one thread count: the HardwareProfile fields of the same names.
struct CpuRates {
    double host_read_gbs = 0;
    std::map<std::string, double> cpu_gemv_gbs;
    std::map<std::string, int> cpu_gemv_revisions;
    double cpu_op_us = 0;
    double cpu_gemv_floor_us = 0;
    double cpu_gemv_tiny_floor_us = 0;
    std::map<std::string, double> cpu_attention_us;
    std::map<std::string, double> cpu_attention_long_us;
    double cpu_prefill_gflops = 0;
    CpuPrefillGrid cpu_prefill_grid;
    bool operator==(const CpuRates&) const = default;
};

struct HardwareProfile {
    static constexpr int kSchemaVersion = 5;
    int schema_version = kSchemaVersion;

    std::string cpu_name;
    int cpu_threads = 0;  // the threads the CPU rates were measured with
    uint64_t ram_total_bytes = 0;
    double host_read_gbs = 0;                   // streaming read, all cpu_threads
    std::map<std::string, double> cpu_gemv_gbs;  // ggml type name -> weight bytes/s, 1 token
    // The CPU kernel's revision each of those rates (and the type's prefill rate) was measured
    // with (BackendCapabilities::kernel_revisions; absent: 1); a run whose backend has another
    // measures the type again.
    std::map<std::string, int> cpu_gemv_revisions;
    // The fixed cost of one op beside its bytes, µs: a small op (an add of one activation row;
    // norms, RoPE, KV stores and adds cost about this), and what one GEMV takes beyond
    // bytes / cpu_gemv_gbs (thread start-up, the last rows' tail) at 4.7 MB and at 0.6 MB
    // (kGemvFloorBytes, kGemvTinyFloorBytes; the cost model interpolates between them).
    double cpu_op_us = 0;
    double cpu_gemv_floor_us = 0;
    double cpu_gemv_tiny_floor_us = 0;
    // One decode step's attention of one layer, µs, per attention shape (attention_key:
    // "32x8x128" = query heads x KV heads x head dim), over kAttentionShortCells and
    // kAttentionLongCells of f16 cache; measured for each model's shape when first planned
    // (the kernels' speed depends on the shape, and on the GPU it is not bound by the KV
    // bytes). The cost model takes the line through the two points at its context.
    std::map<std::string, double> cpu_attention_us;
    std::map<std::string, double> cpu_attention_long_us;
    double disk_read_gbs = 0;                   // sequential, on the model's file system
    bool disk_direct_io = false;                // whether disk_read_gbs was read with O_DIRECT
    // O_DIRECT only: the sweep of queue depths and block sizes, and the point chosen from it
    // (choose_disk_point; disk_read_gbs is its rate). Empty and 0 in mmap mode or unmeasured.
    std::vector<DiskPoint> disk_sweep;
    int disk_queue_depth = 0;
    uint64_t disk_block_bytes = 0;

    std::string gpu_name;  // empty: no GPU
    uint64_t gpu_total_bytes = 0;
    double gpu_read_gbs = 0;                     // device memory read bandwidth
    std::map<std::string, double> gpu_gemv_gbs;  // ggml type name -> weight bytes/s, 1 token
    double h2d_gbs = 0, d2h_gbs = 0;             // PCIe, pinned
    // Pageable host memory through the backend's staging (RAM weights not registered); 0: not
    // measured (a profile written before it was: the cost model then takes h2d_gbs).
    double h2d_staged_gbs = 0;
    double transfer_latency_us = 0;              // one small copy incl. its synchronisation
    // As cpu_op_us and the GEMV floors, on the GPU (a kernel launch and its ramp-up: several
    // µs each, as much as a 10 MB matrix takes at full bandwidth); gpu_graph_node_us: one small
    // op of a decode step recorded once as a CUDA graph and replayed per token (schema 4; 3
    // timed the recording and its update too).
    double gpu_op_us = 0;
    double gpu_gemv_floor_us = 0;
    double gpu_gemv_tiny_floor_us = 0;
    double gpu_graph_node_us = 0;
    std::map<std::string, double> gpu_attention_us;
    std::map<std::string, double> gpu_attention_long_us;

    double cpu_prefill_gflops = 0;  // quantized matmul of a batch; 0: not measured
    CpuPrefillGrid cpu_prefill_grid;  // schema 5
    double gpu_prefill_gflops = 0;

    // The CPU rates above at other thread counts than cpu_threads (runs with -t N), measured
    // when a run first uses the count: bandwidth, GEMV rates and fixed costs change with it.
    std::map<int, CpuRates> cpu_at_threads;

    bool has_gpu() const { return !gpu_name.empty() && gpu_read_gbs > 0; }
    bool operator==(const HardwareProfile&) const = default;
};

// The CPU rates of `p` at its cpu_threads.
CpuRates cpu_rates(const HardwareProfile& p);
// `p` as a run with `threads` CPU threads sees it: cpu_threads and the CPU rates of that count
// (itself for threads <= 0 or cpu_threads); nullopt when the count is not measured.
std::optional<HardwareProfile> at_threads(const HardwareProfile& p, int threads);
// Keeps the CPU rates of `view` (at_threads of `p`, measured further) in `p`, under the view's
// thread count, with the GPU's attention costs and GEMV rates.
void keep_view(HardwareProfile& p, const HardwareProfile& view);

// --- The file (JSON, one object with the fields above; cpu_at_threads maps "8" to an object
// of the CpuRates fields) ---

std::string profile_to_json(const HardwareProfile& profile);
// FormatError naming `source` and the field for malformed JSON, missing or wrong-typed fields,
// negative rates, another schema_version, or a disk sweep that is not O_DIRECT points of
// positive queue depth, block (a multiple of 4096) and rate with the chosen point among them.
HardwareProfile profile_from_json(std::string_view text, std::string_view source = "profile");
// Writes atomically (temporary file + rename), creating the folder. SystemError on failure.
void save_profile(const HardwareProfile& profile, const std::string& path);
// FormatError when a rate a measurement always gives is zero, negative or beyond any machine
// (a damaged or hand-edited cache must be measured again, not trusted).
void check_measured_profile(const HardwareProfile& profile, std::string_view source);
// SystemError when the file cannot be read (ArgumentError when it is not a regular file or is
// over the size cap); FormatError as profile_from_json and check_measured_profile.
HardwareProfile load_profile(const std::string& path);
// $XDG_CACHE_HOME/strata/hardware.json, else ~/.cache/strata/hardware.json. ArgumentError when
// neither XDG_CACHE_HOME nor HOME is set.
std::string default_profile_path();
// Whether `profile` was measured on this CPU and GPU (names compared exactly; an empty gpu_name
// means no GPU). A profile that does not match is to be measured again.
bool profile_matches(const HardwareProfile& profile, std::string_view gpu_name,
                     std::string_view cpu_name);

// This machine's CPU name and RAM: engine/core/host_info.h.

// --- CPU-side measurements (seconds each; every call allocates and frees its own memory) ---

// Multi-threaded streaming read of a buffer far larger than L3 (512 MiB, less on small
// machines); the best pass within `budget` (at least two passes), in GB/s.
// Reads min(RAM/16, max_bytes) bytes (at least 64 MiB): far beyond the last-level cache.
double measure_host_read_gbs(int threads, std::chrono::duration<double> budget, uint64_t max_bytes = 1ull << 30);

struct MatmulMeasureOptions {
    // The matrix, far larger than the caches (server CPUs have 300+ MB of L3: 128 MiB measured
    // cache bandwidth, 2x DRAM, on the GPU machine).
    uint64_t weight_bytes = 1ull << 30;
    int n_tokens = 1;                      // 1: decode GEMV; more: a prefill batch
    std::chrono::duration<double> budget{0.5};
    int64_t inputs = kPrefillInputs;       // the matrix's width (prefill)
};
// The per-op costs of `cpu`, µs: an add of one 4096-float row repeated, and q4_K GEMVs of 4.7
// and 0.6 MB rotating over slices of a matrix larger than the caches, less their bytes at
// `q4k_gemv_gbs` (the large-matrix rate; 0: nothing subtracted). All >= 0.
// The q4_K matrices of 4096 columns the GEMV floors are measured on: 2048 and 256 rows.
constexpr double kGemvFloorBytes = 2048 * 2304;
constexpr double kGemvTinyFloorBytes = 256 * 2304;
struct OpCosts {
    double op_us = 0;
    double gemv_floor_us = 0;       // at kGemvFloorBytes
    double gemv_tiny_floor_us = 0;  // at kGemvTinyFloorBytes
};
OpCosts measure_cpu_op_costs(Backend& cpu, double q4k_gemv_gbs, const MatmulMeasureOptions& options = {});

struct AttentionShape {
    int n_head = 0, n_head_kv = 0, head_dim = 0;
};
constexpr int kAttentionShortCells = 16;
constexpr int kAttentionLongCells = 256;
std::string attention_key(const AttentionShape& shape);  // "32x8x128"; "" when any is 0
// µs of one decode-step attention of `shape` over `cells` cells of an f16 cache on `backend`
// (any backend: its ops, its memory), one token. ArgumentError for an incomplete shape.
double measure_attention_us(Backend& backend, const AttentionShape& shape, int cells,
                            std::chrono::duration<double> budget);

// Weight bytes/s (GB/s) of `cpu`.matmul on a `type` matrix [4096, n] of valid blocks (rows
// quantized from random floats, repeated), one token: the decode rate. UnsupportedError when
// the backend cannot multiply the type.
double measure_cpu_gemv_gbs(Backend& cpu, GgmlType type, const MatmulMeasureOptions& options = {});
// GFLOP/s (2 per weight and token) of a batch of options.n_tokens (kPrefillBatch when left at
// 1) over options.inputs inputs: each product takes the next slice of kPrefillSliceBytes (less
// when options.weight_bytes is less) of a matrix of options.weight_bytes, so that a matrix past
// the caches is read from RAM as a model's weights are.
constexpr uint64_t kPrefillSliceBytes = 16ull << 20;
double measure_cpu_prefill_gflops(Backend& cpu, GgmlType type,
                                  const MatmulMeasureOptions& options = {kPrefillSliceBytes, kPrefillBatch, {}});

struct CpuProfileOptions {
    std::string disk_path;     // the model file or its folder; empty: no disk measurement
    std::vector<GgmlType> types{GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0,
                                GgmlType::Q5_K, GgmlType::F16};
    // Called before each step ("host read", "cpu gemv q4_K", "disk read" ...), from this thread.
    std::function<void(std::string_view step)> progress;
    // Timing of each rate and the sizes measured; smaller values give a quick, rougher profile
    // (tests: STRATA_QUICK_PROFILE, engine/runtime/hardware.h).
    std::chrono::duration<double> budget_per_step{0.5};
    uint64_t gemv_bytes = 1ull << 30;
    DiskMeasureOptions disk;
};
// The CPU, RAM and disk half of a profile (about 3-5 s, the disk up to disk.budget more),
// measured on `cpu` (a host backend: capabilities().host_threads threads; ArgumentError
// otherwise): GPU fields are left empty for the caller. Types the CPU backend cannot multiply
// are left out of cpu_gemv_gbs. cpu_at_threads stays empty.
HardwareProfile measure_cpu_profile(Backend& cpu, const CpuProfileOptions& options);

}  // namespace strata
