// The plain C++ attention chunk (attention_chunk.h): any dequantizable cache type and head size.
// Each cell's K and V head is dequantized once (quant/'s reference) and used by every query head
// of the group; dots and axpys are vec.h's auto-vectorised loops, exp and tanh come from libm.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels_cpu/attention_chunk.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/vec.h"

namespace strata::cpu {
namespace {

// Reads the head_dim values of one kv head in one cache cell as f32: straight from an f32
// cache, else dequantized into scratch (only the head's blocks when heads are block-aligned).
class CacheReader {
  public:
    CacheReader(const Tensor& cache, int64_t head_dim)
        : cache_(cache),
          traits_(type_traits(cache.type)),
          head_dim_(head_dim),
          aligned_(head_dim % traits_.block_size == 0) {}

    // [head_dim] of kv head g at position pos; scratch holds a whole row (ne[0] floats).
    const float* head(int64_t pos, int64_t g, float* scratch) const {
        const uint8_t* row = row_ptr(cache_, cache_cell(cache_, pos));
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

}  // namespace

void attention_chunk_scalar(const AttentionChunk& a) {
    const int64_t n = a.c1 - a.c0;
    const CacheReader k_reader(*a.k_cache, a.dk);
    const CacheReader v_reader(*a.v_cache, a.dv);
    // thread_local: a chunk runs inside the caller's OpenMP loop, once per chunk.
    thread_local std::vector<float> kv_buf, scores;
    kv_buf.resize(static_cast<size_t>(std::max(a.k_cache->ne[0], a.v_cache->ne[0])));
    scores.resize(static_cast<size_t>(a.n_q * n));

    for (int64_t c = 0; c < n; ++c) {  // scores [n_q][n]
        const float* k = k_reader.head(a.c0 + c, a.kv_head, kv_buf.data());
        for (int h = 0; h < a.n_q; ++h) {
            float s = dot_f32(a.q[h], k, a.dk) * a.scale;
            if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
            scores[h * n + c] = s;
        }
    }
    for (int h = 0; h < a.n_q; ++h) {
        float* s = scores.data() + h * n;
        const float m = *std::max_element(s, s + n);
        float l = 0.0f;
        for (int64_t c = 0; c < n; ++c) {
            s[c] = std::exp(s[c] - m);
            l += s[c];
        }
        a.m[h] = m;
        a.l[h] = l;
        std::fill(a.o + h * a.dv, a.o + (h + 1) * a.dv, 0.0f);
    }
    for (int64_t c = 0; c < n; ++c) {
        const float* v = v_reader.head(a.c0 + c, a.kv_head, kv_buf.data());
        for (int h = 0; h < a.n_q; ++h)
            axpy_f32(a.o + h * a.dv, v, scores[h * n + c], a.dv);
    }
}

}  // namespace strata::cpu
