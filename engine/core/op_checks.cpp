// Backend-independent op argument checks (op_checks.h).
#include "engine/core/op_checks.h"

#include <algorithm>
#include <utility>

#include "engine/core/error.h"

namespace strata {

void check_same_shape(std::string_view op, std::string_view what_a, const Tensor& a, std::string_view what_b,
                      const Tensor& b) {
    if (a.ne != b.ne) {
        throw ArgumentError(cat(op, ": ", what_a, " ", a.shape_string(), " and ", what_b, " ",
                                b.shape_string(), " must have the same shape"));
    }
}

void check_attention_params(const AttentionParams& p) {
    if (p.n_head <= 0 || p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0 || p.head_dim_k <= 0 ||
        p.head_dim_v <= 0 || p.window < 0 || !(p.softcap >= 0.0f)) {
        throw ArgumentError(cat(
            "attention: bad params n_head = ", p.n_head, ", n_head_kv = ", p.n_head_kv,
            " (must divide n_head), head_dim_k = ", p.head_dim_k, ", head_dim_v = ", p.head_dim_v,
            ", window = ", p.window, ", softcap = ", p.softcap));
    }
}

void check_attention_shapes(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                            const int32_t* positions, const AttentionParams& p, const Tensor& out) {
    const int64_t n_tokens = q.ne[2];
    if (q.ne[0] != p.head_dim_k || q.ne[1] != p.n_head || q.ne[3] != 1) {
        throw ArgumentError(cat("attention: q ", q.shape_string(), " must be [head_dim_k = ",
                                p.head_dim_k, ", n_head = ", p.n_head, ", n_tokens]"));
    }
    if (out.ne[0] != p.head_dim_v || out.ne[1] != p.n_head || out.ne[2] != n_tokens ||
        out.ne[3] != 1) {
        throw ArgumentError(cat("attention: out ", out.shape_string(), " must be [", p.head_dim_v,
                                ", ", p.n_head, ", ", n_tokens, "]"));
    }
    const int64_t k_row = int64_t{p.head_dim_k} * p.n_head_kv;
    const int64_t v_row = int64_t{p.head_dim_v} * p.n_head_kv;
    const int64_t cells = k_cache.ne[1];
    if (k_cache.ne[0] != k_row || v_cache.ne[0] != v_row || k_cache.ne[2] != 1 ||
        v_cache.ne[2] != 1 || k_cache.ne[3] != 1 || v_cache.ne[3] != 1 || n_cells < 0 ||
        cells <= 0 || v_cache.ne[1] != cells) {
        throw ArgumentError(cat("attention: k_cache ", k_cache.shape_string(), " and v_cache ",
                                v_cache.shape_string(), " must be [", k_row, ", cells] and [",
                                v_row, ", cells] with the same cells"));
    }
    if (n_tokens > 0 && positions == nullptr) throw ArgumentError("attention: positions is null");
    // The ring holds positions [n_cells - cells, n_cells): a full cache (cells >= n_cells) never wraps.
    const int64_t oldest = n_cells - cells;
    for (int64_t t = 0; t < n_tokens; ++t) {
        if (positions[t] < 0 || positions[t] >= n_cells) {
            throw ArgumentError(cat("attention: token ", t, " is at position ", positions[t],
                                    ", outside the ", n_cells,
                                    " positions written so far (kv_store it before attention)"));
        }
        const int64_t first = p.window > 0 ? std::max<int64_t>(0, positions[t] - p.window + 1) : 0;
        if (first < oldest) {
            throw ArgumentError(cat("attention: token ", t, " at position ", positions[t], " sees positions [",
                                    first, ", ", positions[t], "], but the cache's ", cells,
                                    " cells hold only [", oldest, ", ", n_cells, ") (a ring too small for the",
                                    " window plus the batch)"));
        }
    }
}

void check_kv_store_shapes(const Tensor& src, const Tensor& cache, int64_t first_cell) {
    if (cache.ne[2] != 1 || cache.ne[3] != 1 || src.ne[0] != cache.ne[0]) {
        throw ArgumentError(cat("kv_store: src ", src.shape_string(), " rows must match cache ",
                                cache.shape_string(), " rows (cache is 2-D [row, n_cells])"));
    }
    const int64_t n = src.n_rows();
    if (first_cell < 0 || n > cache.ne[1]) {
        throw ArgumentError(cat("kv_store: ", n, " rows from position ", first_cell, " do not fit the cache's ",
                                cache.ne[1], " cells (first position >= 0, at most one row per cell)"));
    }
}

void check_sparse_ffn_shapes(std::string_view op, const SparseFfnArgs& args, const Tensor& y,
                             int64_t embd_multiple) {
    if (!args.gate || !args.x || !args.up || !args.down_t) throw ArgumentError(cat(op, ": a tensor argument is null"));
    const Tensor &gate = *args.gate, &x = *args.x, &up = *args.up, &down_t = *args.down_t;
    const int64_t n_ff = gate.ne[0], n_embd = x.ne[0], n = x.n_rows();
    if (up.ne[0] != n_embd || up.ne[1] != n_ff || down_t.ne[0] != n_embd || down_t.ne[1] != n_ff ||
        gate.n_rows() != n || y.ne[0] != n_embd || y.n_rows() != n || n_embd % std::max<int64_t>(embd_multiple, 1) != 0) {
        throw ArgumentError(cat(op, ": shapes do not match: gate ", gate.shape_string(), ", x ", x.shape_string(), ", up ",
                                up.shape_string(), ", down_t ", down_t.shape_string(), ", y ", y.shape_string(),
                                " (expected gate [n_ff, n], x and y [n_embd, n], up and down_t [n_embd, n_ff]",
                                embd_multiple > 1 ? cat(", n_embd a multiple of ", embd_multiple) : std::string(), ")"));
    }
}

void check_sparse_activation_shapes(std::string_view op, const SparseFfnArgs& args, const Tensor& h) {
    if (!args.gate || !args.x || !args.up) throw ArgumentError(cat(op, ": gate, x or up is null"));
    const Tensor &gate = *args.gate, &x = *args.x, &up = *args.up;
    const int64_t n_ff = gate.ne[0], n = x.n_rows();
    if (up.ne[0] != x.ne[0] || up.ne[1] != n_ff || gate.n_rows() != n || h.ne[0] != n_ff || h.n_rows() != n) {
        throw ArgumentError(cat(op, ": shapes do not match: gate ", gate.shape_string(), ", x ", x.shape_string(), ", up ",
                                up.shape_string(), ", h ", h.shape_string(),
                                " (expected gate and h [n_ff, n], x [n_embd, n], up [n_embd, n_ff])"));
    }
}

void check_combine_rows(const Tensor& x, const RowCombine& c, const Tensor& y) {
    if (x.ne[0] != y.ne[0] || x.ne[2] != 1 || x.ne[3] != 1 || y.ne[2] != 1 || y.ne[3] != 1) {
        throw ArgumentError(cat("combine_rows: x ", x.shape_string(), " and y ", y.shape_string(),
                                " must be 2-D with the same row length"));
    }
    if (x.data != nullptr && x.data == y.data) throw ArgumentError("combine_rows: y must not alias x");
    if (c.offsets == nullptr) throw ArgumentError("combine_rows: offsets is null");
    if (c.offsets[0] != 0) throw ArgumentError(cat("combine_rows: offsets[0] is ", c.offsets[0], ", not 0"));
    const int64_t n = y.ne[1], r = x.ne[1];
    for (int64_t t = 0; t < n; ++t) {
        if (c.offsets[t + 1] < c.offsets[t]) {
            throw ArgumentError(cat("combine_rows: offsets decrease at column ", t, " (", c.offsets[t], " then ",
                                    c.offsets[t + 1], ")"));
        }
    }
    const int64_t entries = c.offsets[n];
    if (entries > 0 && (c.rows == nullptr || c.weights == nullptr)) {
        throw ArgumentError(cat("combine_rows: ", entries, " entries but rows or weights is null"));
    }
    for (int64_t j = 0; j < entries; ++j) {
        if (c.rows[j] < 0 || c.rows[j] >= r) {
            throw ArgumentError(cat("combine_rows: entry ", j, " names row ", c.rows[j], ", outside x's ", r, " rows (",
                                    x.shape_string(), ")"));
        }
    }
}

void check_expert_ffn_shapes(std::string_view op, const ExpertFfnArgs& args, const Tensor& y) {
    if (args.x == nullptr) throw ArgumentError(cat(op, ": x must be given"));
    check_same_shape(op, "x", *args.x, "y", y);
    const int64_t n_embd = args.x->ne[0];
    if (args.x->n_rows() != 1) throw ArgumentError(cat(op, ": x ", args.x->shape_string(), " must be one token"));
    for (size_t j = 0; j < args.experts.size(); ++j) {
        const ExpertRef& e = args.experts[j];
        if (e.gate == nullptr || e.up == nullptr || e.down == nullptr) {
            throw ArgumentError(cat(op, ": expert ", j, " lacks gate, up or down"));
        }
        check_same_shape(op, "gate", *e.gate, "up", *e.up);
        const int64_t width = e.gate->ne[1];
        if (e.gate->ne[0] != n_embd || e.gate->ne[2] != 1 || e.gate->ne[3] != 1 || e.down->ne[0] != width ||
            e.down->ne[1] != n_embd || e.down->ne[2] != 1 || e.down->ne[3] != 1) {
            throw ArgumentError(cat(op, ": expert ", j, " has gate ", e.gate->shape_string(), " and down ",
                                    e.down->shape_string(), " for x ", args.x->shape_string(),
                                    " (want [n_embd, width] and [width, n_embd])"));
        }
    }
}

void check_routed_expert_ffn_shapes(std::string_view op, const RoutedExpertFfnArgs& args, const Tensor& y) {
    check_expert_ffn_shapes(op, {args.x, args.experts, args.act}, y);
    if (args.logits == nullptr) throw ArgumentError(cat(op, ": logits must be given"));
    const auto n_expert = static_cast<int64_t>(args.experts.size());
    const Tensor& l = *args.logits;
    if (l.type != GgmlType::F32 || l.ne[0] != n_expert || l.n_rows() != 1 || !l.is_contiguous()) {
        throw ArgumentError(cat(op, ": logits ", l.shape_string(), " must be contiguous f32 [", n_expert,
                                ", 1], one per expert"));
    }
    if (args.top_k.n_used < 1 || args.top_k.n_used > n_expert) {
        throw ArgumentError(cat(op, ": top-k ", args.top_k.n_used, " of ", n_expert, " experts"));
    }
}

namespace {

void check_f32_vector(std::string_view op, std::string_view what, const Tensor* t, int64_t n) {
    if (t == nullptr) return;
    if (t->type != GgmlType::F32 || t->n_elements() != n || !t->is_contiguous()) {
        throw ArgumentError(cat(op, ": ", what, " ", t->shape_string(), " must be ", n, " contiguous f32 elements"));
    }
}

}  // namespace

void check_sequence_rows(std::string_view op, const Tensor& t, int token_dim, std::span<const SequenceKv> seqs) {
    const int64_t n = t.ne[token_dim];
    if (t.type != GgmlType::F32 || !t.is_contiguous() || t.ne[3] != 1) {
        throw ArgumentError(cat(op, ": ", t.shape_string(), " must be contiguous f32"));
    }
    if (seqs.empty() || n != static_cast<int64_t>(seqs.size())) {
        throw ArgumentError(cat(op, ": ", seqs.size(), " sequences for ", t.shape_string(), " (one token each)"));
    }
    for (size_t i = 0; i < seqs.size(); ++i) {
        if (seqs[i].k_cache == nullptr || seqs[i].v_cache == nullptr || seqs[i].position < 0) {
            throw ArgumentError(cat(op, ": sequence ", i, " has no cache or a negative position"));
        }
    }
}

void check_attention_prologue(std::string_view op, const AttentionPrologueArgs& a) {
    const Tensor &q = a.q, &k = a.k, &v = a.v;
    for (const auto& [what, t] : {std::pair<const char*, const Tensor*>{"q", &q}, {"k", &k}, {"v", &v}}) {
        if (t->type != GgmlType::F32 || !t->is_contiguous() || t->ne[3] != 1) {
            throw ArgumentError(cat(op, ": ", what, " ", t->shape_string(), " must be contiguous f32"));
        }
    }
    const int64_t hd = q.ne[0], n = q.ne[2];
    if (k.ne[0] != hd || k.ne[2] != n || v.ne[1] != n || v.ne[2] != 1) {
        throw ArgumentError(cat(op, ": q ", q.shape_string(), ", k ", k.shape_string(), " and v ", v.shape_string(),
                                " must be [hd, n_head, n], [hd, n_head_kv, n] and [row, n]"));
    }
    check_f32_vector(op, "q bias", a.q_bias, hd * q.ne[1]);
    check_f32_vector(op, "k bias", a.k_bias, hd * k.ne[1]);
    check_f32_vector(op, "v bias", a.v_bias, v.ne[0]);
    check_f32_vector(op, "q norm", a.q_norm, hd);
    check_f32_vector(op, "k norm", a.k_norm, hd);
    if (!(a.eps >= 0.0f)) throw ArgumentError(cat(op, ": eps = ", a.eps, ", expected >= 0"));
    if (n > 0 && a.positions == nullptr) throw ArgumentError(cat(op, ": positions must be given"));
    if ((a.k_cache == nullptr) != (a.v_cache == nullptr)) throw ArgumentError(cat(op, ": give both caches or neither"));
    if (a.k_cache != nullptr) {
        check_kv_store_shapes(Tensor::contiguous(GgmlType::F32, k.data, {hd * k.ne[1], n}, k.memory), *a.k_cache,
                              a.first_cell);
        check_kv_store_shapes(v, *a.v_cache, a.first_cell);
    }
}

}  // namespace strata
