// CudaBackend: the Backend for one CUDA device. Every device byte it uses (weights, KV cache,
// activations, cuBLAS workspace, scratch, op arguments) comes from one DeviceArena sized by a
// byte budget. Free of CUDA headers so engine/ and tools/ may include it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string_view>

#include "engine/core/backend.h"
#include "kernels_cuda/device_arena.h"

namespace strata {
class BackendRegistry;
}

namespace strata::cuda {

// The most tokens CudaBackendOptions::gemv_chunk_max_tokens may send through GEMV chunks.
constexpr int kGemvChunkMaxTokens = 64;

struct CudaBackendOptions {
    int device = 0;
    // Device memory the backend may hold: its arena (one cudaMalloc) plus what cuBLAS keeps for
    // itself, which is measured at construction and left out of the arena. 0: the device's free
    // memory at construction minus reserve_bytes. Not counted: the CUDA context and the loaded
    // kernels, held once per process (docs/BENCHMARKS.md, "CUDA kernels", gives their sizes).
    uint64_t budget_bytes = 0;
    uint64_t reserve_bytes = 512ull << 20;
    // Batches of at most this many tokens take the GEMV kernels (weights dequantized in
    // registers); larger ones dequantize f16 tiles for cuBLAS. At most 8.
    int gemv_max_tokens = 8;
    // Batches above gemv_max_tokens and up to this many tokens run the q8 GEMV on chunks of 8
    // columns (one launch each, x quantized once) instead of the cuBLAS path, whose f16 weight
    // tiles cost a whole model's dequantization per pass however few the tokens (a short
    // prompt). A column's bits do not depend on its chunk. H200, 7B Q4_K_M, prompt passes:
    // 1.2-2.05x at 9-24 tokens, 1.04x at 28, 0.97x at 32 (docs/BENCHMARKS.md, thirty-eighth
    // session). At most kGemvChunkMaxTokens; 0 or <= gemv_max_tokens: never.
    // STRATA_CUDA_GEMV_CHUNKS=N sets it (A/B measurements).
    int gemv_chunk_max_tokens = 24;
    // GEMV on q8-quantized activations with dp4a (Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/Q4_K/Q5_K/Q6_K);
    // false keeps activations in f32 (slower, reference precision).
    bool quantize_activations = true;
    // Consecutive GEMVs on the same x (q, k, v; gate, up) quantize it once; false quantizes for
    // every product (tests compare the two).
    bool reuse_quantized_activations = true;
    // Weight rows one warp of the q8 GEMV streams together (1, 2 or 4), sharing each activation
    // load; fewer for types whose staging needs the registers (Q6_K, Q8_0 take 2), for more than
    // two tokens, and when the matrix has too few rows to fill the device.
    int gemv_rows_per_warp = 4;
    // Batches of at least this many tokens (and at most gemv_max_tokens) take the int8
    // tensor-core GEMV (gemv_mma.cu) on devices of compute capability 8.0 and later; 0: never.
    // Either kernel gives a column the same bits, so a sequence decoded in a batch or checked
    // in a speculative pass gets the logits it gets alone. Only tests and microbenchmarks set it:
    // on the H200 the tensor-core kernel is slower than dp4a at every width (docs/BENCHMARKS.md,
    // thirty-fifth and thirty-seventh sessions).
    int gemv_mma_min_tokens = 0;
    // Attention over at most this many query tokens uses the flash-decoding kernel, more the
    // tiled one.
    int attention_decode_max_tokens = 8;
    // Decode attention splits each token's keys so that about this many blocks per
    // multiprocessor run (more blocks keep more of the cache's bytes in flight).
    int attention_decode_blocks_per_sm = 8;
    // A decode split takes at least this many of a token's keys (a short history takes few
    // splits); 0: by head dim (backend_attention.cpp says why).
    int attention_decode_split_cells = 0;
    // Prefill attention on tensor cores (f16 Q, K, V and P; attention_mma.cu) where the head dims
    // allow; off: the f32 tiled kernel.
    bool attention_tensor_cores = true;
    // Upper bound of the f16 weight tile the cuBLAS path dequantizes into.
    uint64_t gemm_tile_bytes = 64ull << 20;
    // For memory() only, set by the registry's factory (cuda_registration.cpp): what the whole
    // process may hold on the device (--gpu-mem; 0: the device's total), and what its context,
    // lazily loaded kernels and other processes held when the backend was made.
    uint64_t process_budget_bytes = 0;
    uint64_t context_bytes = 0;
};

// Adds "cuda" to `registry` (cuda_registration.cpp): unavailable where no device is visible.
void register_cuda_backend(BackendRegistry& registry);

// Ops are asynchronous on the backend's one stream; synchronize() waits for them. Tensors passed
// to ops live in device memory (MemoryKind::Device), normally blocks of this backend's arena.
// Op arguments that are plain pointers (get_rows ids, positions) are host memory; the RoPE
// freq_factors may be host memory or a tensor in this arena. Calls come from one thread at a
// time (Backend's rule); the arena itself is thread-safe.
class CudaBackend : public Backend {
  public:
    explicit CudaBackend(const CudaBackendOptions& options = {});
    ~CudaBackend() override;
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    std::string_view name() const override { return "cuda"; }
    MemoryKind memory_kind() const override { return MemoryKind::Device; }
    // The device's memory now; limit, used and peak are the arena's, state_bytes cuBLAS's.
    BackendMemory memory() const override;
    // The codec's weight types, graphs, step graphs and the sparse FFN ops (backend_sparse.cpp).
    const BackendCapabilities& capabilities() const override { return capabilities_; }

    // ---- memory (Backend's interface: arena blocks; strided host sources are gathered)
    Buffer allocate(uint64_t bytes, std::string_view what) override;
    void copy_in(const Tensor& src, Tensor& dst) override;
    void copy_out(const Tensor& src, Tensor& dst) override;
    Buffer register_host_memory(const void* p, uint64_t bytes) override;
    // On a copy stream, ordered by events (contiguous sources; a strided one is copy_in).
    void ship_in(const Tensor& src, Tensor& dst, int slot) override;
    void release_slot(int slot) override;
    // A contiguous device tensor in the arena (contents undefined).
    DeviceTensor allocate(GgmlType type, std::initializer_list<int64_t> ne,
                          std::string_view what = "tensor");
    // A device copy of a contiguous host tensor (Host, PinnedHost or File memory); returns once
    // `host` may be reused.
    DeviceTensor upload(const Tensor& host, std::string_view what = "tensor");
    // Copies a contiguous host tensor into an existing device tensor of the same type and shape.
    void copy_to_device(const Tensor& host, Tensor& device);
    // Copies a contiguous device tensor into a host tensor of the same type and shape; waits for
    // every queued op first.
    void download(const Tensor& device, Tensor& host);
    const DeviceArena& arena() const;
    // Device bytes the backend holds outside its arena (cuBLAS's own state), measured when it
    // was built; arena().capacity() + outside_arena_bytes() <= the budget.
    uint64_t outside_arena_bytes() const;
    const CudaBackendOptions& options() const;

    // ---- Backend ops (engine/core/backend.h gives shapes and aliasing rules)
    void matmul(const Tensor& w, const Tensor& x, Tensor& y) override;
    void get_rows(const Tensor& table, const int32_t* ids, int64_t n, Tensor& out) override;
    void rms_norm(const Tensor& x, const Tensor* weight, float eps, Tensor& y) override;
    void add(const Tensor& a, const Tensor& b, Tensor& y) override;
    void scale(Tensor& x, float s) override;
    void combine_rows(const Tensor& x, const RowCombine& c, Tensor& y) override;
    void gated_activation(const Tensor& gate, const Tensor& up, Activation act, Tensor& y) override;
    void rope(Tensor& x, const int32_t* positions, const RopeParams& params) override;
    void kv_store(const Tensor& src, Tensor& cache, int64_t first_cell) override;
    void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                   const int32_t* positions, const AttentionParams& params, Tensor& out) override;
    void softcap(Tensor& x, float cap) override;
    // Fused ops (backend_fused.cpp): one launch each where the shapes allow, else the default.
    void add_rms_norm(Tensor& x, Tensor& delta, const Tensor* delta_weight, const Tensor* weight, float eps,
                      Tensor& y) override;
    void attention_prologue(const AttentionPrologueArgs& args) override;
    void matmul_many(const Tensor& x, std::span<const MatmulOut> outs) override;
    // A batched decode step's stores and attention: one launch each over every sequence's caches
    // (arrays of their addresses), where the caches are alike; else the defaults.
    void kv_store_rows(const Tensor& k, const Tensor& v, std::span<const SequenceKv> seqs) override;
    void attention_rows(const Tensor& q, std::span<const SequenceKv> seqs, const AttentionParams& params,
                        Tensor& out) override;
    // Activation sparsity: mask-based kernels with no host wait when args.counts is given (then
    // the count stays on the device and -1 is returned), so a decode graph records the op;
    // without counts, and for the thresholded activation of batches, the op waits to count.
    int64_t thresholded_gated_activation(const Tensor& gate, const Tensor& up, Activation act, float threshold,
                                         Tensor& y) override;
    int64_t sparse_gated_ffn(const SparseFfnArgs& args, Tensor& y) override;
    int64_t sparse_gated_activation(const SparseFfnArgs& args, Tensor& h) override;
    void expert_ffn(const ExpertFfnArgs& args, Tensor& y) override;
    // Experts on this device whose batched GEMVs take them all (expert_ffn's fast path), at most
    // kRouteMaxExperts (256); routing, experts and their sum in about six launches, no host wait.
    bool routes_experts(std::span<const ExpertRef> experts, int64_t n_used, Activation act) const override;
    void routed_expert_ffn(const RoutedExpertFfnArgs& args, Tensor& y) override;
    void synchronize() override;
    // Stream capture into a CUDA graph; end_graph() updates the previous executable graph (of
    // its kind: plain or step) in place when only parameters changed, else instantiates anew,
    // and launches it.
    void begin_graph() override;
    void end_graph() override;
    void abort_graph() override;
    // Step graphs (Backend's contract): the token and position live in a device slot set by a
    // one-thread kernel before each launch; attention splits its keys by the cache's capacity,
    // so one launch shape serves every position. Recordings per owner and part (owners up to
    // 16, the least recently used dropped first); a regrown scratch block ends replays.
    void begin_step_graph(StepGraphId id, const int32_t* token, const int32_t* position) override;
    bool replay_step(StepGraphId id, int32_t token, int32_t position) override;
    // Graph launches and re-instantiations so far (for tests and --verbose).
    uint64_t graph_launches() const;
    uint64_t graph_instantiations() const;

    struct Impl;

  private:
    // backend_sparse.cpp: one token's masked activations and up rows; the counts an op adds to.
    void masked_up(const SparseFfnArgs& args, int64_t t, float* h, uint32_t* mask, uint64_t* counts);
    uint64_t* sparse_counts(const SparseFfnArgs& args, uint8_t* scratch, const char* op);
    std::unique_ptr<Impl> impl_;
    BackendCapabilities capabilities_;
};

}  // namespace strata::cuda
