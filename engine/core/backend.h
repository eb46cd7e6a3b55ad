// Backend: the interface every compute backend implements (kernels_cpu, kernels_cuda, and the
// fake device of backends/). The layer program calls every op through it, so an op runs on the
// backend that holds its weights. A backend says what it is (name, memory, capabilities), so
// that nothing above it needs to know its class; backends are made by name through the
// registry (backend_registry.h).
//
// Conventions (ggml's): ne[0] is the innermost dimension. Activations are contiguous f32
// tensors with one token per row: x [n_embd, n_tokens]. Weights are [k, n] tensors of any
// supported GgmlType (a linear layer from PyTorch [out, in] is stored as ne = {in, out}).
// All tensors passed to a backend live in memory it can address (memory_kind()); allocate(),
// copy_in() and copy_out() move activations and weights between backends through host memory.
// Invariants: outputs never alias inputs unless an op says "in place"; calls on one backend
// are made from one thread at a time (a backend may use many threads inside an op).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/buffer.h"
#include "engine/core/error.h"
#include "engine/core/expert_routing.h"
#include "engine/core/op_types.h"
#include "engine/core/tensor.h"
#include "quant/input_major.h"

namespace strata {

struct RopeParams {
    int n_rot = 0;               // rotated dims per head (<= head_dim); the rest pass through
    float freq_base = 10000.0f;  // theta_i = pos * base^(-2i/n_rot)
    float freq_scale = 1.0f;     // linear scaling: theta *= freq_scale (= 1/factor)
    RopeStyle style = RopeStyle::Neox;
    const float* freq_factors = nullptr;  // [n_rot/2] divisors of theta (rope_freqs), or null
    // YaRN (rope_yarn.h): ext_factor > 0 keeps the unscaled angle in the fast-rotating dims, the
    // scaled one in the slow dims and a linear ramp between them (the dims where n_ctx_orig
    // holds beta_fast and beta_slow rotations); cos and sin are multiplied by attn_factor and,
    // when ext_factor > 0, by 1 + 0.1·ln(1/freq_scale).
    float ext_factor = 0.0f;
    float attn_factor = 1.0f;
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    int n_ctx_orig = 0;
};

// The products of a sparse gated FFN for one batch (Backend::sparse_gated_ffn). Neuron i is
// active for token t when |act(gate[i, t])| > threshold (CATS).
struct SparseFfnArgs {
    const Tensor* gate = nullptr;    // [n_ff, n] f32: gate·x, before the activation
    const Tensor* x = nullptr;       // [n_embd, n] f32: the FFN's (normed) input
    const Tensor* up = nullptr;      // ffn_up [n_embd, n_ff], any matmul type
    const Tensor* down_t = nullptr;  // ffn_down neuron-major [n_embd, n_ff]: row i = column i
    Activation act = Activation::Silu;
    float threshold = 0.0f;
    // Optional [evaluated, active] (neuron, token) counts in the backend's memory, which the op
    // increments (on a GPU inside a recorded graph too, so every replay counts).
    uint64_t* counts = nullptr;
};

// The sparse gated FFN of one token whose candidate neurons a trained predictor chose
// (Backend::predicted_sparse_gated_ffn): only the candidates' rows of ffn_gate are read; of
// those, neuron i is active when |act(gate_i·x)| > threshold (CATS), and only the active ones'
// rows of up and down_t are read. A neuron the predictor missed is skipped.
struct PredictedFfnArgs {
    const Tensor* x = nullptr;       // [n_embd, 1] f32: the FFN's (normed) input
    const Tensor* gate = nullptr;    // ffn_gate [n_embd, n_ff], any matmul type
    const Tensor* up = nullptr;      // ffn_up [n_embd, n_ff]
    const Tensor* down_t = nullptr;  // ffn_down neuron-major [n_embd, n_ff]
    const int32_t* candidates = nullptr;  // ascending, in [0, n_ff), in host memory
    int64_t n_candidates = 0;
    Activation act = Activation::Silu;
    float threshold = 0.0f;
    uint64_t* counts = nullptr;  // optional [evaluated, active], incremented (host memory)
};

// One routed expert of a token (Backend::expert_ffn): its gated FFN's three matrices and the
// router's weight for it.
struct ExpertRef {
    const Tensor* gate = nullptr;  // [n_embd, width], any matmul type
    const Tensor* up = nullptr;    // [n_embd, width]
    const Tensor* down = nullptr;  // [width, n_embd]
    float weight = 0.0f;
};

// The routed experts of one token, in the order their products are added.
struct ExpertFfnArgs {
    const Tensor* x = nullptr;  // [n_embd, 1] f32: the FFN's (normed) input
    std::span<const ExpertRef> experts;
    Activation act = Activation::Silu;
};

// A decode token's router and experts on one backend (Backend::routed_expert_ffn): every expert
// of the layer by index, so that the backend picks them from the logits itself (on a GPU the
// host then never waits for the routing, and the step can be one graph).
struct RoutedExpertFfnArgs {
    const Tensor* x = nullptr;           // [n_embd, 1] f32: the FFN's (normed) input
    const Tensor* logits = nullptr;      // [n_expert, 1] f32: the router's, on the same backend
    std::span<const ExpertRef> experts;  // [n_expert], by index; their weight fields are unused
    ExpertTopK top_k;                    // engine/core/expert_routing.h
    Activation act = Activation::Silu;
};

// One product of a group that shares its input (Backend::matmul_many): y = w · x.
struct MatmulOut {
    const Tensor* w = nullptr;
    Tensor* y = nullptr;
};

// Attention's prologue for n new tokens on one backend (Backend::attention_prologue), in place:
// q and k get their bias, then per head an RMSNorm with q_norm / k_norm, then RoPE at
// positions; v gets its bias; then k and v are stored at first_cell of the caches (kv_store),
// where the caches are given. Each part is skipped where its tensor is null.
struct AttentionPrologueArgs {
    Tensor q;  // [head_dim_k, n_head, n] f32, contiguous
    Tensor k;  // [head_dim_k, n_head_kv, n] f32, contiguous
    Tensor v;  // [head_dim_v * n_head_kv, n] f32, contiguous
    const Tensor* q_bias = nullptr;  // [head_dim_k * n_head] f32
    const Tensor* k_bias = nullptr;  // [head_dim_k * n_head_kv] f32
    const Tensor* v_bias = nullptr;  // [head_dim_v * n_head_kv] f32
    const Tensor* q_norm = nullptr;  // [head_dim_k] f32
    const Tensor* k_norm = nullptr;  // [head_dim_k] f32
    float eps = 0.0f;
    const int32_t* positions = nullptr;  // [n], a host array
    RopeParams rope;
    Tensor* k_cache = nullptr;  // [head_dim_k * n_head_kv, cells]; both caches or neither
    Tensor* v_cache = nullptr;  // [head_dim_v * n_head_kv, cells]
    int64_t first_cell = 0;
};

// Weighted sums of gathered rows (Backend::combine_rows), in CSR form: output column t sums
// the entries [offsets[t], offsets[t + 1]), entry j adding weights[j] times row rows[j] of the
// input. Host arrays: offsets has one more entry than the output has columns, starts at 0 and
// never decreases; rows and weights have offsets[n] entries.
struct RowCombine {
    const int32_t* offsets = nullptr;
    const int32_t* rows = nullptr;
    const float* weights = nullptr;
};

// Names a step graph recording (Backend::begin_step_graph): its owner and a part of the
// owner's step (0: the whole step).
struct StepGraphId {
    StepGraphId(const void* owner, int part = 0) : owner(owner), part(part) {}  // NOLINT: a bare owner is part 0
    const void* owner;
    int part;
};

struct AttentionParams {
    int n_head = 0;
    int n_head_kv = 0;       // n_head % n_head_kv == 0 (GQA/MQA broadcast)
    int head_dim_k = 0;
    int head_dim_v = 0;
    float scale = 1.0f;      // applied to q·k
    int32_t window = 0;      // sliding window: key p0 is visible to query p1 iff p1 - p0 < window; 0 = full
    float softcap = 0.0f;    // attention-logit soft-capping c·tanh(s/c); 0 = off
};

// One sequence of a batched decode step (kv_store_rows, attention_rows): its caches and the
// position of its one new token, which goes to cell position % cells.
struct SequenceKv {
    Tensor* k_cache = nullptr;
    Tensor* v_cache = nullptr;
    int32_t position = 0;
};

// A backend's memory now (Backend::memory()). Bytes; 0 where a field does not apply.
struct BackendMemory {
    uint64_t total_bytes = 0;   // the device's (or the host's) memory
    uint64_t free_bytes = 0;    // free on it now, for every process
    // What the process may hold there (--gpu-mem: context, library state and allocations);
    // 0: no budget of the backend's own (the host: the placement keeps --ram-mem).
    uint64_t budget_bytes = 0;
    // What allocate() may hand out in all (inside budget_bytes); 0: no limit of its own.
    uint64_t limit_bytes = 0;
    uint64_t used_bytes = 0;    // held now by this backend's allocations
    uint64_t peak_bytes = 0;    // the most they held
    // Held for this process outside allocate() and counted in the budget: the context, lazily
    // loaded kernels and other processes' memory when the backend started (context_bytes), and
    // the backend's library state such as cuBLAS's (state_bytes).
    uint64_t context_bytes = 0;
    uint64_t state_bytes = 0;

    // What allocate() can still hand out (0 when limit_bytes is 0: not a limited device).
    uint64_t allocatable_bytes() const { return limit_bytes > used_bytes ? limit_bytes - used_bytes : 0; }
};

// What a backend can do (Backend::capabilities()); fixed for the backend's life.
struct BackendCapabilities {
    // The hardware it runs on as a hardware profile records it: the CUDA device's name,
    // "fake-gpu", the CPU's model name.
    std::string device_name;
    // Weight types matmul and get_rows accept.
    std::vector<GgmlType> weight_types;
    // thresholded_gated_activation and sparse_gated_ffn (activation sparsity).
    bool sparse_ffn = false;
    // predicted_sparse_gated_ffn (a trained predictor's candidates; host memory only).
    bool predicted_ffn = false;
    // sparse_gated_activation (decode's active up rows, for an ffn_down read whole).
    bool sparse_activation = false;
    // mask_small_values (TEAL-style input sparsity: the FFN input's small values set to zero).
    bool input_mask = false;
    // input_major_matvec (products over exact input-major Q4_K copies in host memory).
    bool input_major = false;
    // expert_ffn (a token's routed experts as one op).
    bool expert_ffn = false;
    // begin_graph ... end_graph records and launches the ops as one unit.
    bool graphs = false;
    // begin_step_graph and replay_step (a decode step, or stretches of one, recorded once and
    // replayed per token).
    bool step_graphs = false;
    // Host threads its ops run on (0: ops run on a device).
    int host_threads = 0;
    // Device bytes its ops keep as scratch beyond the activations (the cuBLAS path's f16 weight
    // tile, attention partials, argument buffers), to reserve before placing weights.
    uint64_t op_scratch_bytes = 0;
    // The revision of the kernel that multiplies each weight type, raised when a kernel's speed
    // changes (absent: 1). A hardware profile keeps the revision each rate was measured with
    // and measures a rate again when the backend's differs, so a new kernel is not planned at
    // the old one's speed.
    std::map<GgmlType, int> kernel_revisions;

    bool runs_weight_type(GgmlType type) const;
    int kernel_revision(GgmlType type) const;
};

// The types quant/ has a reference dequantizer for: what a backend that dequantizes any
// weight (the CPU) runs.
std::vector<GgmlType> reference_weight_types();

class Backend {
public:
    virtual ~Backend() = default;

    // The name it is registered under (backend_registry.h): "cpu", "cuda", "fake".
    virtual std::string_view name() const = 0;
    // The memory this backend's ops read and write.
    virtual MemoryKind memory_kind() const = 0;
    // Its memory now (thread-safe).
    virtual BackendMemory memory() const = 0;
    virtual const BackendCapabilities& capabilities() const = 0;

    // ---- memory
    // `bytes` of memory this backend's ops address, counted against its budget (BudgetError,
    // naming `what`, when it does not fit). Contents undefined.
    virtual Buffer allocate(uint64_t bytes, std::string_view what) = 0;
    // Copies the host tensor src (Host, PinnedHost or File memory; rows may be strided, as in a
    // column slice) into dst in this backend's memory (contiguous, same type and shape). Ordered
    // after the ops queued before it; returns once src may be reused.
    virtual void copy_in(const Tensor& src, Tensor& dst) = 0;
    // Copies src in this backend's memory into the contiguous host tensor dst (same type and
    // shape) once the ops queued before it have run; returns when dst holds the bytes.
    virtual void copy_out(const Tensor& src, Tensor& dst) = 0;
    // Lets this backend's copies read host memory [p, p + bytes) directly (CUDA: a read-only
    // registration, which pins the pages), so copy_in from it skips the staging chunks. The
    // memory must stay mapped and unchanged while the handle lives; dropping it undoes this. An
    // empty handle where the backend has no such thing or the registration was refused.
    virtual Buffer register_host_memory(const void* p, uint64_t bytes) {
        (void)p, (void)bytes;
        return {};
    }
    // Weight shipping (a prompt batch multiplying host weights here): the caller copies each
    // weight into one of kShipSlots device buffers in turn. ship_in is copy_in into slot `slot`'s
    // buffer that may run beside the ops queued before it (CUDA: on a copy stream, so the next
    // weight crosses PCIe while this one is multiplied); it waits only for the ops queued before
    // release_slot(slot), the last readers of the slot's previous weight. Ops queued after it see
    // the bytes; returns once src may be reused. By default both are plain copy_in, in order.
    static constexpr int kShipSlots = 2;
    virtual void ship_in(const Tensor& src, Tensor& dst, int slot) {
        (void)slot;
        copy_in(src, dst);
    }
    // The ops queued so far are the last to read slot `slot`'s buffer.
    virtual void release_slot(int slot) { (void)slot; }

    // ---- ops
    // y [n, m] = W [k, n] · x [k, m]: each row of W dotted with each row of x. y is f32.
    virtual void matmul(const Tensor& w, const Tensor& x, Tensor& y) = 0;

    // out [ne0, n] = rows ids[0..n) of table [ne0, n_rows] (any type), as f32.
    virtual void get_rows(const Tensor& table, const int32_t* ids, int64_t n, Tensor& out) = 0;

    // Per row of x: y = x / sqrt(mean(x²) + eps) · weight (weight f32 [ne0], or null for none).
    // x may be viewed with a smaller ne[0] to normalise per head. y may alias x (in place).
    virtual void rms_norm(const Tensor& x, const Tensor* weight, float eps, Tensor& y) = 0;

    // y = a + b, with b either the same shape or one row broadcast over a's rows.
    // y may alias a (in place).
    virtual void add(const Tensor& a, const Tensor& b, Tensor& y) = 0;

    // x *= s, in place.
    virtual void scale(Tensor& x, float s) = 0;

    // y [ne0, n] column t = Σ_{j in [c.offsets[t], c.offsets[t+1])} c.weights[j] · x[:, c.rows[j]]
    // in that order (0 where the range is empty); x [ne0, r] f32, y f32 not aliasing x. A
    // mixture's expert outputs, one row per (token, expert), summed per token in one op.
    virtual void combine_rows(const Tensor& x, const RowCombine& c, Tensor& y) = 0;

    // y = act(gate) ⊙ up, all [n_ff, n]. y may alias gate or up (elementwise, in place).
    virtual void gated_activation(const Tensor& gate, const Tensor& up, Activation act,
                                  Tensor& y) = 0;

    // In place on x [head_dim, n_heads, n_tokens]; positions[t] is token t's position.
    virtual void rope(Tensor& x, const int32_t* positions, const RopeParams& params) = 0;

    // Writes src [row, n] (f32) rows at positions first_cell .. first_cell + n - 1 into cache
    // [row, cells], converting to the cache's type (f16, q8_0...). Position p goes to cell
    // p % cells: a cache with fewer cells than positions is a ring (a sliding-window layer's),
    // one with as many never wraps. n <= cells.
    virtual void kv_store(const Tensor& src, Tensor& cache, int64_t first_cell) = 0;

    // Causal attention of q [head_dim_k, n_head, n_tokens] over the n_cells positions written
    // so far, position p held in cell p % cells (kv_store): k_cache [head_dim_k * n_head_kv,
    // cells], v_cache [head_dim_v * n_head_kv, cells]. Query t at positions[t] sees keys at
    // p <= positions[t] (and within the window), all of which must still be held: at or after
    // position n_cells - cells. out [head_dim_v, n_head, n_tokens] f32.
    virtual void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           int64_t n_cells, const int32_t* positions, const AttentionParams& params,
                           Tensor& out) = 0;

    // x = c·tanh(x/c), in place.
    virtual void softcap(Tensor& x, float cap) = 0;

    // ---- activation sparsity (engine/runtime/sparse_ffn.h), where capabilities().sparse_ffn.
    // Backends without these ops throw UnsupportedError; the runtime checks the capability
    // before it runs a sparse model on them.
    // y = act(gate) ⊙ up where |act(gate)| > threshold, else 0, all [n_ff, n]; y may alias gate
    // or up. Returns how many elements were kept (a GPU waits for its op to count).
    virtual int64_t thresholded_gated_activation(const Tensor& gate, const Tensor& up, Activation act,
                                                 float threshold, Tensor& y) {
        (void)gate, (void)up, (void)act, (void)threshold, (void)y;
        throw UnsupportedError(cat("the ", name(), " backend has no thresholded activation (activation sparsity)"));
    }
    // y [n_embd, n] = Σ over the active neurons i of token t: act(gate[i, t])·(up_i · x_t)·down_t_i,
    // reading only the active rows of up and down_t (decode). Returns the number of active
    // (neuron, token) pairs, or -1 when args.counts is given and the backend counts on the
    // device (a GPU: it never waits for the device then). y does not alias the inputs.
    virtual int64_t sparse_gated_ffn(const SparseFfnArgs& args, Tensor& y) {
        (void)args, (void)y;
        throw UnsupportedError(cat("the ", name(), " backend has no sparse FFN (activation sparsity)"));
    }

    // h [n_ff, n] = act(gate[i, t])·(up_i · x_t) for the active neurons (CATS, as above), 0 for
    // the rest, reading only the active rows of up (args.down_t is not used: the caller reads
    // ffn_down whole, a plain matmul of h). Returns the number of active (neuron, token) pairs.
    // Where capabilities().sparse_activation.
    virtual int64_t sparse_gated_activation(const SparseFfnArgs& args, Tensor& h) {
        (void)args, (void)h;
        throw UnsupportedError(cat("the ", name(), " backend has no sparse gated activation (activation sparsity)"));
    }

    // x[i] = 0 where |x[i]| <= threshold, in place (x f32, any shape). Returns how many values
    // were kept. Where capabilities().input_mask.
    virtual int64_t mask_small_values(Tensor& x, float threshold) {
        (void)x, (void)threshold;
        throw UnsupportedError(cat("the ", name(), " backend has no input mask (input sparsity)"));
    }

    // y [n_out, 1] = W·x through W's input-major Q4_K copy (quant/input_major.h, in host memory),
    // reading only the columns of the nonzero values of x [n_in, 1]: a masked FFN input or
    // masked activations. Where capabilities().input_major.
    virtual void input_major_matvec(const InputMajorQ4K& w, const Tensor& x, Tensor& y) {
        (void)w, (void)x, (void)y;
        throw UnsupportedError(cat("the ", name(), " backend has no input-major products (activation sparsity)"));
    }

    // y [n_embd, 1] = Σ over the active candidates i: act(gate_i·x)·(up_i·x)·down_t_i (one token).
    // Returns the number of active neurons. Where capabilities().predicted_ffn.
    virtual int64_t predicted_sparse_gated_ffn(const PredictedFfnArgs& args, Tensor& y) {
        (void)args, (void)y;
        throw UnsupportedError(cat("the ", name(), " backend has no predicted sparse FFN (trained predictors)"));
    }

    // ---- mixture of experts, where capabilities().expert_ffn.
    // y [n_embd, 1] += Σ_j weight_j · down_j(act(gate_j·x) ⊙ (up_j·x)), the experts in the
    // order given (one token's decode step: one op instead of a few per expert).
    virtual void expert_ffn(const ExpertFfnArgs& args, Tensor& y) {
        (void)args, (void)y;
        throw UnsupportedError(cat("the ", name(), " backend has no fused expert FFN"));
    }
    // Whether routed_expert_ffn takes this layer's experts (all of them, by index) with top-k
    // n_used and this activation: their types, shapes and count.
    virtual bool routes_experts(std::span<const ExpertRef> experts, int64_t n_used, Activation act) const {
        (void)experts, (void)n_used, (void)act;
        return false;
    }
    // y [n_embd, 1] = Σ_j p_j · down_{e_j}(act(gate_{e_j}·x) ⊙ (up_{e_j}·x)) over the top-k
    // (e_j, p_j) = route_top_k(logits) (engine/core/expert_routing.h): routing and experts in
    // one op, without the host. Where routes_experts(args.experts, ...).
    virtual void routed_expert_ffn(const RoutedExpertFfnArgs& args, Tensor& y) {
        (void)args, (void)y;
        throw UnsupportedError(cat("the ", name(), " backend has no routed expert FFN"));
    }

    // ---- fused ops: a run of the ops above as one. The defaults (backend_fused.cpp) call those
    // ops in order, so every backend has them; a device overrides them to launch less.
    // x += delta, then y = rms_norm(x, weight, eps): a block's residual add and the next block's
    // input norm. With delta_weight, delta is first normed with it (rms_norm(delta, delta_weight,
    // eps): the block's post norm, Gemma's). x [ne0, n] is updated in place; delta may be
    // overwritten; y (same shape) does not alias x or delta.
    virtual void add_rms_norm(Tensor& x, Tensor& delta, const Tensor* delta_weight, const Tensor* weight, float eps,
                              Tensor& y);
    // Biases, per-head norms, RoPE and the KV stores of new tokens (AttentionPrologueArgs).
    virtual void attention_prologue(const AttentionPrologueArgs& args);
    // matmul(*o.w, x, *o.y) for every o in order: the products of one input (a layer's q, k and
    // v; an FFN's gate and up). No y aliases x or another y.
    virtual void matmul_many(const Tensor& x, std::span<const MatmulOut> outs);
    // A batched decode step's KV stores, one token per sequence: row i of k [row_k, n] and of
    // v [row_v, n] into seqs[i]'s caches at its position (kv_store of one row each).
    virtual void kv_store_rows(const Tensor& k, const Tensor& v, std::span<const SequenceKv> seqs);
    // A batched decode step's attention, one query token per sequence: q [head_dim_k, n_head, n]
    // token i over seqs[i]'s caches up to its position (attention of one token each, with
    // n_cells = position + 1) into out [head_dim_v, n_head, n].
    virtual void attention_rows(const Tensor& q, std::span<const SequenceKv> seqs, const AttentionParams& params,
                                Tensor& out);

    // Waits until every queued op has finished (a no-op on synchronous backends).
    virtual void synchronize() {}

    // ---- graphs, where capabilities().graphs: ops between begin_graph() and end_graph() may be
    // recorded and launched as one unit (CUDA graphs: one launch instead of hundreds). Between
    // them nothing may wait for the device or read results on the host (no copy_out), and
    // buffers may not be freed. abort_graph() discards a recording after an exception. Backends
    // without graphs run the ops as they come and ignore these calls.
    virtual void begin_graph() {}
    virtual void end_graph() {}
    virtual void abort_graph() {}
    // ---- step graphs, where capabilities().step_graphs (callers check; the others throw
    // UnsupportedError). A decode step of one token, or a stretch of one that runs on the device
    // alone, recorded for replay: between begin_step_graph() and end_graph(), op arguments
    // passed by these very pointers (`token` to get_rows, `position` to rope and attention) and a
    // kv_store at cell *position are read on the device from values that replay_step() sets, so
    // the recording serves later positions too. `id` names the recording: its owner (the
    // sequence's executor, so that sequences taking turns each replay their own) and a part
    // within the owner's step (0: the whole step; others: stretches of it, such as a layer's
    // attention between two host-side MoE blocks). The caller records again whenever anything
    // else about its step changed (buffers, cache).
    virtual void begin_step_graph(StepGraphId id, const int32_t* token, const int32_t* position) {
        (void)id, (void)token, (void)position;
        throw UnsupportedError(cat("the ", name(), " backend does not record step graphs"));
    }
    // Runs id's last recording for (token, position) and returns true; false when there is none
    // to replay (nothing recorded under id, or the backend's scratch moved).
    virtual bool replay_step(StepGraphId id, int32_t token, int32_t position) {
        (void)id, (void)token, (void)position;
        throw UnsupportedError(cat("the ", name(), " backend does not replay step graphs"));
    }
};

// A backend that computes on host memory (a CPU), as opposed to a device's.
inline bool is_host(const Backend& b) { return b.memory_kind() != MemoryKind::Device; }

}  // namespace strata
