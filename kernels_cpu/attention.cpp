// Causal attention over a K/V cache of any dequantizable type (f32, f16, q8_0, q4_0 ...):
// GQA head mapping, sliding window, logit softcap, online (flash-style) softmax in f32.
// Parallel over (token, head); each output is computed by one thread in a fixed order.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/core/error.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/vec.h"

namespace strata::cpu {
namespace {

constexpr int64_t kTileCells = 32;  // keys scored before one rescale of the running sums

// Reads the head_dim values of one kv head in one cache cell as f32: straight from an f32
// cache, else dequantized into scratch (only the head's blocks when heads are block-aligned).
class CacheReader {
  public:
    CacheReader(const Tensor& cache, int64_t head_dim)
        : cache_(cache),
          traits_(type_traits(cache.type)),
          head_dim_(head_dim),
          aligned_(head_dim % traits_.block_size == 0) {}

    // [head_dim] of kv head g in cell `cell`; scratch holds a whole row (ne[0] floats).
    const float* head(int64_t cell, int64_t g, float* scratch) const {
        const uint8_t* row = row_ptr(cache_, cell);
        if (cache_.type == GgmlType::F32) {
            return reinterpret_cast<const float*>(row) + g * head_dim_;
        }
        if (aligned_) {
            const uint64_t offset =
                static_cast<uint64_t>(g * head_dim_ / traits_.block_size) * traits_.type_size;
            traits_.dequantize(row + offset, scratch, head_dim_);
            return scratch;
        }
        traits_.dequantize(row, scratch, cache_.ne[0]);
        return scratch + g * head_dim_;
    }

  private:
    const Tensor& cache_;
    const TypeTraits& traits_;
    int64_t head_dim_;
    bool aligned_;
};

void check_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                     const int32_t* positions, const AttentionParams& p, const Tensor& out) {
    if (p.n_head <= 0 || p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0 || p.head_dim_k <= 0 ||
        p.head_dim_v <= 0 || p.window < 0 || !(p.softcap >= 0.0f)) {
        throw ArgumentError(cat(
            "attention: bad params n_head = ", p.n_head, ", n_head_kv = ", p.n_head_kv,
            " (must divide n_head), head_dim_k = ", p.head_dim_k, ", head_dim_v = ", p.head_dim_v,
            ", window = ", p.window, ", softcap = ", p.softcap));
    }
    check_f32("attention", "q", q);
    check_f32("attention", "out", out);
    check_dequantizable("attention", "k_cache", k_cache);
    check_dequantizable("attention", "v_cache", v_cache);
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
    if (k_cache.ne[0] != k_row || v_cache.ne[0] != v_row || k_cache.ne[2] != 1 ||
        v_cache.ne[2] != 1 || k_cache.ne[3] != 1 || v_cache.ne[3] != 1 || n_cells < 0 ||
        n_cells > k_cache.ne[1] || n_cells > v_cache.ne[1]) {
        throw ArgumentError(cat("attention: k_cache ", k_cache.shape_string(), " and v_cache ",
                                v_cache.shape_string(), " must be [", k_row, ", cells] and [",
                                v_row, ", cells] with n_cells = ", n_cells, " <= cells"));
    }
    if (n_tokens > 0 && positions == nullptr) throw ArgumentError("attention: positions is null");
    for (int64_t t = 0; t < n_tokens; ++t) {
        if (positions[t] < 0 || positions[t] >= n_cells) {
            throw ArgumentError(cat("attention: token ", t, " is at position ", positions[t],
                                    ", outside the ", n_cells,
                                    " cells written so far (kv_store it before attention)"));
        }
    }
}

}  // namespace

// out [head_dim_v, n_head, n_tokens] = softmax(scale · q kᵀ, causal + window) v
void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
               const int32_t* positions, const AttentionParams& params, Tensor& out,
               int n_threads) {
    check_attention(q, k_cache, v_cache, n_cells, positions, params, out);
    const int64_t n_head = params.n_head;
    const int64_t group = params.n_head / params.n_head_kv;  // q heads per kv head
    const int64_t dk = params.head_dim_k;
    const int64_t dv = params.head_dim_v;
    const int64_t n_items = q.ne[2] * n_head;
    const CacheReader k_reader(k_cache, dk);
    const CacheReader v_reader(v_cache, dv);
    const float cap = params.softcap;
    const float inv_cap = cap > 0.0f ? 1.0f / cap : 0.0f;
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();

#pragma omp parallel num_threads(n_threads) if (n_items > 1 && n_items * n_cells * dk > 32768)
    {
        std::vector<float> k_buf(static_cast<size_t>(k_cache.ne[0]));
        std::vector<float> v_buf(static_cast<size_t>(v_cache.ne[0]));
        std::vector<float> acc(static_cast<size_t>(dv));
        float scores[kTileCells];
#pragma omp for schedule(dynamic, 1)
        for (int64_t item = 0; item < n_items; ++item) {
            const int64_t t = item / n_head;
            const int64_t g = item % n_head / group;  // kv head of q head item % n_head
            const float* qh = f32_row(q, item);       // [dk]
            float* oh = f32_row(out, item);           // [dv]
            const int64_t pos = positions[t];
            const int64_t last = pos;  // check_attention: pos < n_cells
            const int64_t first =
                params.window > 0 ? std::max<int64_t>(0, pos - params.window + 1) : 0;

            std::fill(acc.begin(), acc.end(), 0.0f);
            float run_max = kNegInf;  // running max of the scores seen
            float run_sum = 0.0f;     // Σ exp(score - run_max)
            for (int64_t c0 = first; c0 <= last; c0 += kTileCells) {
                const int64_t c1 = std::min(last + 1, c0 + kTileCells);
                float tile_max = kNegInf;
                for (int64_t c = c0; c < c1; ++c) {
                    float s = dot_f32(qh, k_reader.head(c, g, k_buf.data()), dk) * params.scale;
                    if (cap > 0.0f) s = cap * std::tanh(s * inv_cap);
                    scores[c - c0] = s;
                    tile_max = std::max(tile_max, s);
                }
                const float new_max = std::max(run_max, tile_max);
                if (run_max != kNegInf && new_max != run_max) {
                    const float correction = std::exp(run_max - new_max);
                    run_sum *= correction;
                    scale_f32(acc.data(), correction, dv);
                }
                run_max = new_max;
                for (int64_t c = c0; c < c1; ++c) {
                    const float p = std::exp(scores[c - c0] - run_max);
                    run_sum += p;
                    axpy_f32(acc.data(), v_reader.head(c, g, v_buf.data()), p, dv);
                }
            }
            const float inv_sum = run_sum > 0.0f ? 1.0f / run_sum : 0.0f;
            for (int64_t i = 0; i < dv; ++i)
                oh[i] = acc[i] * inv_sum;
        }
    }
}

}  // namespace strata::cpu
