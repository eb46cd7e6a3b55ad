// Element-wise f32 ops on device views: add (same shape or one broadcast row), scale, softcap and
// the gated activations of the FFN. Grid: x over a row's elements, y over rows (grid-stride).
#include "kernels_cuda/activation.cuh"
#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxGridY = 65535;

enum class Op : int { Add, AddBroadcast, Scale, Softcap, Silu, GeluTanh };

// One kernel for every element-wise op: y = op(a, b) with a scalar parameter p.
// With xq (gated activations, ne0 % 32 == 0): y also quantized to q8 blocks as quantize_rows_q8
// would (xq [rows][ne0], xds [rows][ne0/32]); a warp's 32 lanes are one block of a row.
template <Op kOp>
__global__ void elementwise_kernel(F32View a, F32View b, F32View y, float p, float p2, int8_t* xq, float2* xds) {
    pdl_wait();
    for (int64_t r = blockIdx.y; r < a.n_rows; r += gridDim.y) {
        const float* ar = a.row(r);
        const float* br = b.row(kOp == Op::AddBroadcast ? 0 : r);  // b is a for scale/softcap
        float* yr = y.row(r);
        for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.ne0;
             i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
            const float v = ar[i];
            if constexpr (kOp == Op::Add || kOp == Op::AddBroadcast) yr[i] = v + br[i];
            if constexpr (kOp == Op::Scale) yr[i] = v * p;
            if constexpr (kOp == Op::Softcap) yr[i] = p * tanhf(v * p2);
            if constexpr (kOp == Op::Silu || kOp == Op::GeluTanh) {
                const float g = (kOp == Op::Silu ? silu(v) : gelu_tanh(v)) * br[i];
                yr[i] = g;
                if (xq != nullptr) quantize_q8_warp(g, static_cast<int>(i % 32), xq + r * a.ne0 + i / 32 * 32, xds + r * (a.ne0 / 32) + i / 32);
            }
        }
    }
}

template <Op kOp>
void launch(F32View a, F32View b, F32View y, float p, float p2, cudaStream_t stream, int8_t* xq = nullptr,
            float* xds = nullptr) {
    if (a.n_rows == 0 || a.ne0 == 0) return;
    const dim3 grid(capped_blocks(a.ne0, kThreads),
                    static_cast<unsigned>(a.n_rows < kMaxGridY ? a.n_rows : kMaxGridY));
    launch_pdl(elementwise_kernel<kOp>, grid, dim3(kThreads), 0, stream, a, b, y, p, p2, xq, reinterpret_cast<float2*>(xds));
    CUDA_CHECK_LAUNCH("elementwise_kernel");
}

// One output row per blockIdx.y (grid-stride), its elements over x: the entries summed in order.
__global__ void combine_rows_kernel(F32View x, const int32_t* offsets, const int32_t* rows, const float* weights,
                                    F32View y, bool accumulate) {
    for (int64_t t = blockIdx.y; t < y.n_rows; t += gridDim.y) {
        const int32_t first = offsets[t], last = offsets[t + 1];
        float* yr = y.row(t);
        for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < y.ne0;
             i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
            float acc = 0.0f;
            for (int32_t j = first; j < last; ++j) acc += weights[j] * x.row(rows[j])[i];
            yr[i] = accumulate ? yr[i] + acc : acc;
        }
    }
}

// The per-launch values of a replayed decode graph (kernel arguments: no host buffer to keep).
__global__ void set_step_slot_kernel(int32_t* slot, int32_t token, int32_t position) {
    slot[0] = token;
    slot[1] = position;
}

}  // namespace

void set_step_slot(int32_t* slot, int32_t token, int32_t position, cudaStream_t stream) {
    set_step_slot_kernel<<<1, 1, 0, stream>>>(slot, token, position);
    CUDA_CHECK_LAUNCH("set_step_slot_kernel");
}

void add(F32View a, F32View b, bool broadcast_b, F32View y, cudaStream_t stream) {
    if (broadcast_b) launch<Op::AddBroadcast>(a, b, y, 0.0f, 0.0f, stream);
    else launch<Op::Add>(a, b, y, 0.0f, 0.0f, stream);
}

void scale(F32View x, float s, cudaStream_t stream) {
    launch<Op::Scale>(x, x, x, s, 0.0f, stream);
}

void combine_rows(F32View x, const int32_t* offsets, const int32_t* rows, const float* weights, F32View y,
                  bool accumulate, cudaStream_t stream) {
    if (y.n_rows == 0 || y.ne0 == 0) return;
    const dim3 grid(capped_blocks(y.ne0, kThreads), static_cast<unsigned>(y.n_rows < kMaxGridY ? y.n_rows : kMaxGridY));
    combine_rows_kernel<<<grid, kThreads, 0, stream>>>(x, offsets, rows, weights, y, accumulate);
    CUDA_CHECK_LAUNCH("combine_rows_kernel");
}

void softcap(F32View x, float cap, cudaStream_t stream) {
    launch<Op::Softcap>(x, x, x, cap, 1.0f / cap, stream);
}

bool gated_activation(F32View gate, F32View up, Activation act, F32View y, int8_t* xq, float* xds,
                      cudaStream_t stream) {
    if (xq != nullptr && gate.ne0 % 32 != 0) xq = nullptr;
    if (act == Activation::Silu) launch<Op::Silu>(gate, up, y, 0.0f, 0.0f, stream, xq, xds);
    else launch<Op::GeluTanh>(gate, up, y, 0.0f, 0.0f, stream, xq, xds);
    return xq != nullptr && gate.n_rows > 0 && gate.ne0 > 0;
}

}  // namespace strata::cuda
