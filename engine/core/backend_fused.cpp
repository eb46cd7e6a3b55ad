// The fused ops' defaults (backend.h): the ops they stand for, in order. A backend that only
// implements these is correct; a device overrides them to launch fewer kernels.
#include "engine/core/backend.h"
#include "engine/core/op_checks.h"

namespace strata {
namespace {

// t [ne0, ne1, n] as [ne0 · ne1, n]: a token's heads as one row.
Tensor token_rows(const Tensor& t) {
    return Tensor::contiguous(t.type, t.data, {t.ne[0] * t.ne[1], t.ne[2]}, t.memory);
}

// t [ne0, ne1, n] as [ne0, ne1 · n]: one row per head.
Tensor head_rows(const Tensor& t) {
    return Tensor::contiguous(t.type, t.data, {t.ne[0], t.ne[1] * t.ne[2]}, t.memory);
}

}  // namespace

void Backend::add_rms_norm(Tensor& x, Tensor& delta, const Tensor* delta_weight, const Tensor* weight, float eps,
                           Tensor& y) {
    if (delta_weight != nullptr) rms_norm(delta, delta_weight, eps, delta);
    add(x, delta, x);
    rms_norm(x, weight, eps, y);
}

void Backend::matmul_many(const Tensor& x, std::span<const MatmulOut> outs) {
    for (const MatmulOut& o : outs) matmul(*o.w, x, *o.y);
}

void Backend::kv_store_rows(const Tensor& k, const Tensor& v, std::span<const SequenceKv> seqs) {
    check_sequence_rows("kv_store_rows", k, 1, seqs);
    check_sequence_rows("kv_store_rows", v, 1, seqs);
    for (size_t i = 0; i < seqs.size(); ++i) {
        const auto r = static_cast<int64_t>(i);
        kv_store(k.rows(r, 1), *seqs[i].k_cache, seqs[i].position);
        kv_store(v.rows(r, 1), *seqs[i].v_cache, seqs[i].position);
    }
}

void Backend::attention_rows(const Tensor& q, std::span<const SequenceKv> seqs, const AttentionParams& params,
                             Tensor& out) {
    check_sequence_rows("attention_rows", q, 2, seqs);
    check_sequence_rows("attention_rows", out, 2, seqs);
    for (size_t i = 0; i < seqs.size(); ++i) {
        const Tensor qi = q.plane(static_cast<int64_t>(i));
        Tensor oi = out.plane(static_cast<int64_t>(i));
        attention(qi, *seqs[i].k_cache, *seqs[i].v_cache, int64_t{seqs[i].position} + 1, &seqs[i].position, params, oi);
    }
}

void Backend::attention_prologue(const AttentionPrologueArgs& a) {
    check_attention_prologue("attention_prologue", a);
    Tensor q_rows = token_rows(a.q), k_rows = token_rows(a.k), v = a.v;
    if (a.q_bias != nullptr) add(q_rows, *a.q_bias, q_rows);
    if (a.k_bias != nullptr) add(k_rows, *a.k_bias, k_rows);
    if (a.v_bias != nullptr) add(v, *a.v_bias, v);
    if (a.q_norm != nullptr) {
        Tensor qh = head_rows(a.q);
        rms_norm(qh, a.q_norm, a.eps, qh);
    }
    if (a.k_norm != nullptr) {
        Tensor kh = head_rows(a.k);
        rms_norm(kh, a.k_norm, a.eps, kh);
    }
    Tensor q = a.q, k = a.k;
    rope(q, a.positions, a.rope);
    rope(k, a.positions, a.rope);
    if (a.k_cache != nullptr) {
        kv_store(k_rows, *a.k_cache, a.first_cell);
        kv_store(v, *a.v_cache, a.first_cell);
    }
}

}  // namespace strata
