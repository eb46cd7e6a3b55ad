// f32 vector primitives (vec.h). The loops are written so g++ vectorises them: fixed-width
// partial-sum arrays, no reductions across lanes until the end. target_clones picks the widest
// variant the CPU supports at load time; intrinsics come with the quantized kernels later.
#include "kernels_cpu/vec.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STRATA_VEC_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define STRATA_VEC_CLONES
#endif

namespace strata::cpu {
namespace {

// Pairwise sum of a fixed-size partial-sum array (same order every call).
template <int N>
inline float reduce(const float* acc) {
    float tmp[N];
    for (int j = 0; j < N; ++j)
        tmp[j] = acc[j];
    for (int width = N / 2; width > 0; width /= 2) {
        for (int j = 0; j < width; ++j)
            tmp[j] += tmp[j + width];
    }
    return tmp[0];
}

}  // namespace

STRATA_VEC_CLONES
float dot_f32(const float* a, const float* b, int64_t n) {
    constexpr int kLanes = 32;
    float acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        for (int j = 0; j < kLanes; ++j)
            acc[j] += a[i + j] * b[i + j];
    }
    float tail = 0.0f;
    for (; i < n; ++i)
        tail += a[i] * b[i];
    return reduce<kLanes>(acc) + tail;
}

STRATA_VEC_CLONES
void dot4_f32(const float* w, int64_t w_stride, const float* x, int64_t n, float out[4]) {
    constexpr int kLanes = 16;
    const float* w0 = w;
    const float* w1 = w + w_stride;
    const float* w2 = w + 2 * w_stride;
    const float* w3 = w + 3 * w_stride;
    float a0[kLanes] = {}, a1[kLanes] = {}, a2[kLanes] = {}, a3[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) {
            const float xv = x[i + j];
            a0[j] += w0[i + j] * xv;
            a1[j] += w1[i + j] * xv;
            a2[j] += w2[i + j] * xv;
            a3[j] += w3[i + j] * xv;
        }
    }
    float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, t3 = 0.0f;
    for (; i < n; ++i) {
        t0 += w0[i] * x[i];
        t1 += w1[i] * x[i];
        t2 += w2[i] * x[i];
        t3 += w3[i] * x[i];
    }
    out[0] = reduce<kLanes>(a0) + t0;
    out[1] = reduce<kLanes>(a1) + t1;
    out[2] = reduce<kLanes>(a2) + t2;
    out[3] = reduce<kLanes>(a3) + t3;
}

STRATA_VEC_CLONES
void axpy_f32(float* y, const float* x, float a, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        y[i] += a * x[i];
}

STRATA_VEC_CLONES
void scale_f32(float* y, float s, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        y[i] *= s;
}

}  // namespace strata::cpu
