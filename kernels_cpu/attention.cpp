// Causal attention over a K/V cache of any dequantizable type (f32, f16, q8_0, q4_0 ...):
// GQA head mapping, sliding window (over a ring cache: position p in cell p % cells), logit
// softcap, softmax in f32. The work is split into chunks of positions per (token, kv head) (attention_chunk.h), each reading its KV head once for
// all query heads of the group; chunks run in parallel for decode (flash-decoding) and are
// folded in a fixed order, so results never depend on the thread count or the batch.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/op_checks.h"
#include "kernels_cpu/attention_chunk.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/row_ops.h"

namespace strata::cpu {
namespace {

// Partials of a split decode, in floats (32 MiB): past this the chunks of a token run in turn.
constexpr int64_t kMaxSplitFloats = int64_t{1} << 23;

void check_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                     const int32_t* positions, const AttentionParams& p, const Tensor& out) {
    check_attention_params(p);
    check_f32("attention", "q", q);
    check_f32("attention", "out", out);
    check_dequantizable("attention", "k_cache", k_cache);
    check_dequantizable("attention", "v_cache", v_cache);
    check_attention_shapes(q, k_cache, v_cache, n_cells, positions, p, out);
}

}  // namespace

void merge_attention_partial(float& m, float& l, float* o, float chunk_m, float chunk_l,
                             const float* chunk_o, int64_t dv) {
    if (m == -std::numeric_limits<float>::infinity()) {
        m = chunk_m;
        l = chunk_l;
        std::copy(chunk_o, chunk_o + dv, o);
        return;
    }
    const float new_m = std::max(m, chunk_m);
    const float a = std::exp(m - new_m);
    const float b = std::exp(chunk_m - new_m);
    l = l * a + chunk_l * b;
    for (int64_t i = 0; i < dv; ++i)
        o[i] = o[i] * a + chunk_o[i] * b;
    m = new_m;
}

namespace {

// The work of one attention call: which chunks each token has, running one, folding them.
class AttentionPlan {
  public:
    AttentionPlan(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                  const int32_t* positions, const AttentionParams& p, Tensor& out)
        : q_(q), k_(k_cache), v_(v_cache), positions_(positions), p_(p), out_(out),
          group_(p.n_head / p.n_head_kv),
          part_(group_ * (p.head_dim_v + 2)) {
        const RowOps& ops = row_ops();
        chunk_fn_ = ops.attention_supports(k_.type, v_.type, p.head_dim_k, p.head_dim_v)
                        ? ops.attention_chunk
                        : attention_chunk_scalar;
        const int64_t n_tokens = q.ne[2];
        first_.resize(static_cast<size_t>(n_tokens));
        offset_.assign(static_cast<size_t>(n_tokens + 1), 0);
        for (int64_t t = 0; t < n_tokens; ++t) {
            const int64_t pos = positions[t];
            first_[t] = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
            const int64_t n_chunks =
                pos / kAttentionChunkCells - first_[t] / kAttentionChunkCells + 1;
            offset_[t + 1] = offset_[t] + n_chunks;
        }
    }

    int64_t n_tokens() const { return q_.ne[2]; }
    int64_t n_kv_heads() const { return p_.n_head_kv; }
    int64_t total_chunks() const { return offset_.back(); }
    int64_t n_chunks(int64_t t) const { return offset_[t + 1] - offset_[t]; }
    int64_t part_floats() const { return part_; }  // o [group][dv], m [group], l [group]

    // Token of the global chunk index gc (chunks numbered token by token).
    int64_t token_of(int64_t gc) const {
        return std::upper_bound(offset_.begin(), offset_.end(), gc) - offset_.begin() - 1;
    }
    int64_t chunk_index(int64_t t) const { return offset_[t]; }

    // Chunk j of token t, kv head g, into part_floats() floats at partial.
    void run_chunk(int64_t t, int64_t g, int64_t j, float* partial) const {
        thread_local std::vector<const float*> q_rows;
        q_rows.resize(static_cast<size_t>(group_));
        for (int64_t h = 0; h < group_; ++h)
            q_rows[h] = f32_row(q_, t * p_.n_head + g * group_ + h);
        const int64_t pos = positions_[t];
        const int64_t c = first_[t] / kAttentionChunkCells + j;  // cells [c·C, (c+1)·C)
        AttentionChunk a{};
        a.q = q_rows.data();
        a.n_q = static_cast<int>(group_);
        a.k_cache = &k_;
        a.v_cache = &v_;
        a.kv_head = g;
        a.dk = p_.head_dim_k;
        a.dv = p_.head_dim_v;
        a.c0 = std::max(first_[t], c * kAttentionChunkCells);
        a.c1 = std::min(pos + 1, (c + 1) * kAttentionChunkCells);
        a.scale = p_.scale;
        a.softcap = p_.softcap;
        a.o = partial;
        a.m = partial + group_ * p_.head_dim_v;
        a.l = a.m + group_;
        chunk_fn_(a);
    }

    // Folds the partials of token t, kv head g, chunk by chunk (partial(j) gives chunk j's), and
    // writes the group's output rows.
    template <class Partial>
    void finish(int64_t t, int64_t g, Partial partial) const {
        const int64_t dv = p_.head_dim_v;
        thread_local std::vector<float> state;  // o [group][dv], m [group], l [group]
        state.resize(static_cast<size_t>(part_));
        float* o = state.data();
        float* m = o + group_ * dv;
        float* l = m + group_;
        std::fill(m, m + group_, -std::numeric_limits<float>::infinity());
        for (int64_t j = 0; j < n_chunks(t); ++j) {
            const float* pj = partial(j);
            const float* pm = pj + group_ * dv;
            for (int64_t h = 0; h < group_; ++h) {
                merge_attention_partial(m[h], l[h], o + h * dv, pm[h], pm[group_ + h],
                                        pj + h * dv, dv);
            }
        }
        for (int64_t h = 0; h < group_; ++h) {
            float* oh = f32_row(out_, t * p_.n_head + g * group_ + h);  // [dv]
            const float inv_sum = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
            for (int64_t i = 0; i < dv; ++i)
                oh[i] = o[h * dv + i] * inv_sum;
        }
    }

  private:
    const Tensor& q_;
    const Tensor& k_;
    const Tensor& v_;
    const int32_t* positions_;
    const AttentionParams& p_;
    Tensor& out_;
    int64_t group_;
    int64_t part_;
    AttentionChunkFn chunk_fn_;
    std::vector<int64_t> first_;   // [n_tokens] first visible cell
    std::vector<int64_t> offset_;  // [n_tokens + 1] chunks before token t
};

}  // namespace

// out [head_dim_v, n_head, n_tokens] = softmax(scale · q kᵀ, causal + window) v
void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
               const int32_t* positions, const AttentionParams& params, Tensor& out,
               int n_threads) {
    check_attention(q, k_cache, v_cache, n_cells, positions, params, out);
    if (q.ne[2] == 0) return;
    const AttentionPlan plan(q, k_cache, v_cache, positions, params, out);
    const int64_t n_kv = plan.n_kv_heads();
    const int64_t n_pairs = plan.n_tokens() * n_kv;  // (token, kv head)
    const int64_t n_work = plan.total_chunks() * n_kv;
    const int64_t part = plan.part_floats();
    const bool parallel = n_work > 1 && n_work * kAttentionChunkCells * params.head_dim_k *
                                                (params.n_head / n_kv) > 32768;
    // Few (token, kv head) pairs for the threads (decode): every chunk is a work item and its
    // partials are kept, then folded per pair. Otherwise each pair runs its chunks in turn. Both
    // fold the same partials in the same order, so the choice never changes a bit.
    const bool split = n_threads > 1 && n_pairs < 4 * n_threads && n_work > n_pairs &&
                       n_work * part <= kMaxSplitFloats;
    if (split) {
        std::vector<float> partials(static_cast<size_t>(n_work * part));
#pragma omp parallel num_threads(n_threads) if (parallel)
        {
#pragma omp for schedule(dynamic, 1)
            for (int64_t w = 0; w < n_work; ++w) {
                const int64_t gc = w / n_kv;  // global chunk index
                const int64_t t = plan.token_of(gc);
                plan.run_chunk(t, w % n_kv, gc - plan.chunk_index(t), partials.data() + w * part);
            }
#pragma omp for schedule(dynamic, 1)
            for (int64_t pair = 0; pair < n_pairs; ++pair) {
                const int64_t t = pair / n_kv, g = pair % n_kv;
                plan.finish(t, g, [&](int64_t j) {
                    return partials.data() + ((plan.chunk_index(t) + j) * n_kv + g) * part;
                });
            }
        }
        return;
    }
#pragma omp parallel num_threads(n_threads) if (parallel && n_pairs > 1)
    {
        std::vector<float> partial(static_cast<size_t>(part));
#pragma omp for schedule(dynamic, 1)
        for (int64_t pair = 0; pair < n_pairs; ++pair) {
            const int64_t t = pair / n_kv, g = pair % n_kv;
            plan.finish(t, g, [&](int64_t j) {
                plan.run_chunk(t, g, j, partial.data());
                return partial.data();
            });
        }
    }
}

}  // namespace strata::cpu
