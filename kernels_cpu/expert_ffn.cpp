// The routed experts of one decode token as one op (ops.h expert_ffn). Run as separate ops, a
// token's 8 experts cost 32 OpenMP regions of a few microseconds of work each; here they are one
// region in three phases:
//   1. every expert's gate and up rows against x (quantized once per partner type), in units of
//      kUnitRows rows of one expert: h_j[rows] = act(gate_j·x) ⊙ (up_j·x);
//   2. each h_j quantized to its down matrix's partner type;
//   3. y's rows in units: y[i] += Σ_j weight_j · (down_j[i]·h_j), the experts in order.
// Each dot is the qdot kernel call matmul makes (qdot.h: a row's result does not depend on how
// rows are grouped), and the activation runs the gated_activation row kernel over units that
// start at multiples of 16 elements, so h_j and each down_j[i]·h_j equal the separate ops'
// values. Experts with a type that has no integer kernel in the active variant (or with
// quantize_activations off: the reference path) run as the separate ops.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/expert_routing.h"
#include "engine/core/op_checks.h"
#include "kernels_cpu/kernel_variant.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/qdot.h"
#include "kernels_cpu/row_ops.h"
#include "kernels_cpu/thread_scratch.h"

namespace strata::cpu {
namespace {

constexpr int64_t kUnitRows = 32;     // weight rows per work unit (a multiple of 16: whole cache lines of y)
constexpr int64_t kQuantSlice = 512;  // activation elements quantized per work item

void check_expert_args(const char* op, const ExpertFfnArgs& args, const Tensor& y) {
    check_expert_ffn_shapes(op, args, y);
    check_f32(op, "x", *args.x);
    check_f32(op, "y", y);
    for (const ExpertRef& e : args.experts) {
        check_dequantizable(op, "gate", *e.gate);
        check_dequantizable(op, "up", *e.up);
        check_dequantizable(op, "down", *e.down);
    }
}

// 64-byte aligned scratch of the calling thread, kept for the next call (one per layer).
uint8_t* scratch(size_t bytes) {
    thread_local ThreadScratch buffer;
    return buffer.get(bytes);
}

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

// One activation row quantized for a kernel: where its bytes and (Q8_0 / Q8_1) float scales go.
struct QuantRow {
    const QDotKernel* kernel = nullptr;
    int64_t k = 0;
    uint8_t* q = nullptr;
    float* d = nullptr;
    QDotActs acts() const { return {q, 0, d, 0}; }
};

size_t quant_row_bytes(const QDotKernel& kernel, int64_t k) {
    const int64_t blocks = k / type_traits(kernel.act_type).block_size;
    return align64(act_row_bytes(kernel, k)) + (reads_expanded_scales(kernel) ? align64(blocks * sizeof(float)) : 0);
}

QuantRow lay_out(const QDotKernel& kernel, int64_t k, uint8_t*& cursor) {
    QuantRow r{&kernel, k, cursor, nullptr};
    cursor += align64(act_row_bytes(kernel, k));
    if (reads_expanded_scales(kernel)) {
        r.d = reinterpret_cast<float*>(cursor);
        cursor += align64(static_cast<size_t>(k / type_traits(kernel.act_type).block_size) * sizeof(float));
    }
    return r;
}

// Elements [e0, e0 + len) of src into r (whole partner blocks).
void quantize_slice(const QuantRow& r, const float* src, int64_t e0, int64_t len) {
    const TypeTraits& at = type_traits(r.kernel->act_type);
    uint8_t* dst = r.q + act_offset(*r.kernel, e0);
    r.kernel->quantize(src + e0, dst, len);
    if (r.d != nullptr) expand_act_scales(r.kernel->act_type, dst, len / at.block_size, r.d + e0 / at.block_size);
}

// One expert as the separate ops (types without an integer kernel, or the reference path).
void expert_as_ops(const ExpertRef& e, const Tensor& x, Activation act, Tensor& y, int n_threads,
                   bool quantize_activations) {
    const int64_t n_embd = x.ne[0], width = e.gate->ne[1];
    std::vector<float> g(static_cast<size_t>(width)), u(static_cast<size_t>(width)), o(static_cast<size_t>(n_embd));
    Tensor gt = Tensor::contiguous(GgmlType::F32, g.data(), {width, 1});
    Tensor ut = Tensor::contiguous(GgmlType::F32, u.data(), {width, 1});
    Tensor ot = Tensor::contiguous(GgmlType::F32, o.data(), {n_embd, 1});
    matmul(*e.gate, x, gt, n_threads, quantize_activations);
    matmul(*e.up, x, ut, n_threads, quantize_activations);
    gated_activation(gt, ut, act, gt, n_threads);
    matmul(*e.down, gt, ot, n_threads, quantize_activations);
    float* out = f32_row(y, 0);
    for (int64_t i = 0; i < n_embd; ++i) out[i] += e.weight * o[static_cast<size_t>(i)];
}

// The fused path's plan: each expert's kernels and where its quantized rows and h live.
struct FusedExpert {
    const ExpertRef* ref;
    const QDotKernel *gate_k, *up_k, *down_k;
    const QuantRow *xg, *xu;  // x for the gate / up kernel
    QuantRow hq;              // h for the down kernel
    float* h;                 // [width]
    int64_t first_unit;       // this expert's first phase-1 unit
};

int64_t slice_elements(const QuantRow& r) {
    const int64_t bs = type_traits(r.kernel->act_type).block_size;
    return std::max<int64_t>(1, kQuantSlice / bs) * bs;
}

int64_t n_slices(const QuantRow& r) { return (r.k + slice_elements(r) - 1) / slice_elements(r); }

struct FusedPlan {
    std::vector<QuantRow> xq;  // x, once per distinct gate/up partner type
    std::vector<FusedExpert> experts;
    int64_t units = 0;   // phase 1: kUnitRows rows of one expert's gate and up
    int64_t slices = 0;  // phase 2: slices of the h_j to quantize

    const QuantRow* x_for(const QDotKernel* k) const {
        return &*std::find_if(xq.begin(), xq.end(), [&](const QuantRow& r) { return same_acts(*r.kernel, *k); });
    }
};

// Lays out the scratch (x per partner type, then per expert h and its quantized copy) and
// quantizes x.
FusedPlan plan_fused(const std::vector<const ExpertRef*>& fused, const Tensor& x, KernelVariant variant) {
    const int64_t n_embd = x.ne[0];
    std::vector<const QDotKernel*> x_kernels;
    size_t bytes = 0;
    for (const ExpertRef* e : fused) {
        for (GgmlType t : {e->gate->type, e->up->type}) {
            const QDotKernel* k = find_qdot_kernel(t, variant);
            const bool seen = std::any_of(x_kernels.begin(), x_kernels.end(),
                                          [&](const QDotKernel* s) { return same_acts(*s, *k); });
            if (!seen) {
                x_kernels.push_back(k);
                bytes += quant_row_bytes(*k, n_embd);
            }
        }
        const int64_t width = e->gate->ne[1];
        bytes += align64(static_cast<size_t>(width) * sizeof(float)) +
                 quant_row_bytes(*find_qdot_kernel(e->down->type, variant), width);
    }
    uint8_t* cursor = scratch(bytes);
    FusedPlan p;
    p.xq.reserve(x_kernels.size());
    for (const QDotKernel* k : x_kernels) p.xq.push_back(lay_out(*k, n_embd, cursor));
    for (const ExpertRef* e : fused) {
        FusedExpert f{};
        f.ref = e;
        f.gate_k = find_qdot_kernel(e->gate->type, variant);
        f.up_k = find_qdot_kernel(e->up->type, variant);
        f.down_k = find_qdot_kernel(e->down->type, variant);
        f.xg = p.x_for(f.gate_k);
        f.xu = p.x_for(f.up_k);
        const int64_t width = e->gate->ne[1];
        f.h = reinterpret_cast<float*>(cursor);
        cursor += align64(static_cast<size_t>(width) * sizeof(float));
        f.hq = lay_out(*f.down_k, width, cursor);
        f.first_unit = p.units;
        p.units += (width + kUnitRows - 1) / kUnitRows;
        p.slices += n_slices(f.hq);
        p.experts.push_back(f);
    }
    for (const QuantRow& r : p.xq) {
        const int64_t sl = slice_elements(r);
        for (int64_t e0 = 0; e0 < n_embd; e0 += sl) quantize_slice(r, f32_row(x, 0), e0, std::min(sl, n_embd - e0));
    }
    return p;
}

// Phase 1 for unit u: h_j = act(gate_j·x) ⊙ (up_j·x) over kUnitRows rows of one expert.
void gate_up_unit(const FusedPlan& p, int64_t u, ActMulFn act_mul) {
    const auto it = std::upper_bound(p.experts.begin(), p.experts.end(), u,
                                     [](int64_t v, const FusedExpert& f) { return v < f.first_unit; }) - 1;
    const FusedExpert& f = *it;
    const Tensor &gate = *f.ref->gate, &up = *f.ref->up;
    const int64_t r0 = (u - f.first_unit) * kUnitRows;
    const int64_t r1 = std::min(gate.ne[1], r0 + kUnitRows);
    const int64_t gb = gate.ne[0] / type_traits(gate.type).block_size;
    const int64_t ub = up.ne[0] / type_traits(up.type).block_size;
    float g[kUnitRows], v[kUnitRows];
    for (int64_t r = r0; r < r1; ++r) {
        f.gate_k->dot(row_ptr(gate, r), f.xg->acts(), gb, 1, &g[r - r0]);
        f.up_k->dot(row_ptr(up, r), f.xu->acts(), ub, 1, &v[r - r0]);
    }
    act_mul(g, v, f.h + r0, r1 - r0);
}

// Phase 2 for slice s (numbered over the experts in order): part of one h_j quantized.
void quantize_h_slice(const FusedPlan& p, int64_t s) {
    for (const FusedExpert& f : p.experts) {
        if (s < n_slices(f.hq)) {
            const int64_t sl = slice_elements(f.hq), e0 = s * sl;
            quantize_slice(f.hq, f.h, e0, std::min(sl, f.hq.k - e0));
            return;
        }
        s -= n_slices(f.hq);
    }
}

// Phase 3 for rows [i0, i1) of y: y[i] += Σ_j weight_j · down_j[i]·h_j, the experts in order.
void down_rows(const FusedPlan& p, int64_t i0, int64_t i1, float* y) {
    for (const FusedExpert& f : p.experts) {
        const Tensor& down = *f.ref->down;
        const int64_t db = down.ne[0] / type_traits(down.type).block_size;
        for (int64_t i = i0; i < i1; ++i) {
            float d = 0.0f;
            f.down_k->dot(row_ptr(down, i), f.hq.acts(), db, 1, &d);
            y[i] += f.ref->weight * d;
        }
    }
}

}  // namespace

void expert_ffn(const ExpertFfnArgs& args, Tensor& y, int n_threads, bool quantize_activations) {
    check_expert_args("expert_ffn", args, y);
    const Tensor& x = *args.x;
    const int64_t n_embd = x.ne[0];
    const ActMulFn act_mul = gated_act_mul(args.act, "expert_ffn");
    const KernelVariant variant = quantize_activations ? active_kernel_variant() : KernelVariant::Dequant;

    // Experts with integer kernels for all three matrices go fused; the rest as separate ops.
    std::vector<const ExpertRef*> fused;
    for (const ExpertRef& e : args.experts) {
        const bool has = variant != KernelVariant::Dequant && find_qdot_kernel(e.gate->type, variant) != nullptr &&
                         find_qdot_kernel(e.up->type, variant) != nullptr &&
                         find_qdot_kernel(e.down->type, variant) != nullptr;
        if (has) fused.push_back(&e);
        else expert_as_ops(e, x, args.act, y, n_threads, quantize_activations);
    }
    if (fused.empty()) return;

    const FusedPlan p = plan_fused(fused, x, variant);
    const int64_t out_units = (n_embd + kUnitRows - 1) / kUnitRows;
    float* out = f32_row(y, 0);
#pragma omp parallel num_threads(n_threads) if (n_threads > 1)
    {
#pragma omp for schedule(dynamic, 1)
        for (int64_t u = 0; u < p.units; ++u) gate_up_unit(p, u, act_mul);
#pragma omp for schedule(static)
        for (int64_t s = 0; s < p.slices; ++s) quantize_h_slice(p, s);
#pragma omp for schedule(dynamic, 1)
        for (int64_t u = 0; u < out_units; ++u) down_rows(p, u * kUnitRows, std::min(n_embd, (u + 1) * kUnitRows), out);
    }
}

void routed_expert_ffn(const RoutedExpertFfnArgs& args, Tensor& y, int n_threads, bool quantize_activations) {
    const char* op = "routed_expert_ffn";
    check_routed_expert_ffn_shapes(op, args, y);
    check_f32(op, "logits", *args.logits);
    const auto n_expert = static_cast<int64_t>(args.experts.size());
    const auto k = static_cast<size_t>(args.top_k.n_used);
    std::vector<int32_t> ids(k);
    std::vector<float> weights(k), prob(static_cast<size_t>(n_expert));
    route_top_k(f32_row(*args.logits, 0), n_expert, args.top_k, ids.data(), weights.data(), prob.data());
    std::vector<ExpertRef> chosen(k);
    for (size_t j = 0; j < k; ++j) {
        chosen[j] = args.experts[static_cast<size_t>(ids[j])];
        chosen[j].weight = weights[j];
    }
    check_f32(op, "y", y);
    float* out = f32_row(y, 0);
    std::fill(out, out + y.ne[0], 0.0f);
    expert_ffn({args.x, chosen, args.act}, y, n_threads, quantize_activations);
}

}  // namespace strata::cpu
