// CUDA step graphs (begin_step_graph / replay_step) against the CPU backend: a decode step's
// position-dependent ops (get_rows of the token, RoPE, kv_store at the position, attention over
// the cache) recorded once and replayed at later positions with other tokens must give what
// the CPU computes eagerly at every step, for f16 and q8_0 caches and for two sequences taking
// turns on one backend, for a step recorded in two parts, and over a sliding-window ring cache (position p in cell p % cells) that
// the replayed steps wrap around; and a replay is refused before any recording and after the
// backend's scratch moved.
#include <cmath>
#include <random>
#include <vector>

#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

using test::HostTensor;

constexpr int kHead = 4, kHeadKv = 2, kDim = 64, kVocab = 37, kCtx = 300;
constexpr int kEager = 20, kSteps = 40;  // positions [0, kEager) eager, then graph steps

// The ops of one step on any backend: q, k, v rows of the token, RoPE at the position, K/V
// stored at the position, attention over positions [0, position] (the last `window` of them when
// window > 0).
struct Step {
    Backend& b;
    const Tensor &tq, &tk, &tv;  // embedding-like tables [row, kVocab]
    Tensor &q, &k, &v, &kc, &vc, &out;
    int32_t window = 0;
    void run(const int32_t* token, const int32_t* position) {
        head(token, position);
        tail(position);
    }
    // The token's rows and their RoPE.
    void head(const int32_t* token, const int32_t* position) {
        b.get_rows(tq, token, 1, q);
        b.get_rows(tk, token, 1, k);
        b.get_rows(tv, token, 1, v);
        RopeParams rope;
        rope.n_rot = kDim;
        Tensor qh = Tensor::contiguous(GgmlType::F32, q.data, {kDim, kHead, 1}, q.memory);
        Tensor kh = Tensor::contiguous(GgmlType::F32, k.data, {kDim, kHeadKv, 1}, k.memory);
        b.rope(qh, position, rope);
        b.rope(kh, position, rope);
    }
    // The KV store and the attention.
    void tail(const int32_t* position) {
        Tensor qh = Tensor::contiguous(GgmlType::F32, q.data, {kDim, kHead, 1}, q.memory);
        b.kv_store(k, kc, *position);
        b.kv_store(v, vc, *position);
        AttentionParams p;
        p.n_head = kHead;
        p.n_head_kv = kHeadKv;
        p.head_dim_k = p.head_dim_v = kDim;
        p.scale = 1.0f / std::sqrt(static_cast<float>(kDim));
        p.window = window;
        Tensor oh = Tensor::contiguous(GgmlType::F32, out.data, {kDim, kHead, 1}, out.memory);
        b.attention(qh, kc, vc, *position + 1, position, p, oh);
    }
};

// One sequence: its tables, activations and caches on the CPU and on the GPU.
struct Sequence {
    HostTensor tq = cpu::test::random_f32({kDim * kHead, kVocab}, -2.0f, 2.0f);
    HostTensor tk = cpu::test::random_f32({kDim * kHeadKv, kVocab}, -2.0f, 2.0f);
    HostTensor tv = cpu::test::random_f32({kDim * kHeadKv, kVocab}, -2.0f, 2.0f);
    HostTensor q{GgmlType::F32, {kDim * kHead, 1}}, k{GgmlType::F32, {kDim * kHeadKv, 1}};
    HostTensor v{GgmlType::F32, {kDim * kHeadKv, 1}}, out{GgmlType::F32, {kDim * kHead, 1}};
    HostTensor kc, vc;
    DeviceTensor tq_d, tk_d, tv_d, q_d, k_d, v_d, out_d, kc_d, vc_d;
    int32_t window = 0;
    // cells < kCtx with a window: a ring.
    Sequence(CudaBackend& gpu, GgmlType cache_type, int64_t cells = kCtx, int32_t window_ = 0)
        : kc(cache_type, {kDim * kHeadKv, cells}), vc(cache_type, {kDim * kHeadKv, cells}), window(window_) {
        tq_d = test::to_device(gpu, tq), tk_d = test::to_device(gpu, tk), tv_d = test::to_device(gpu, tv);
        q_d = test::nan_device(gpu, {kDim * kHead, 1}), k_d = test::nan_device(gpu, {kDim * kHeadKv, 1});
        v_d = test::nan_device(gpu, {kDim * kHeadKv, 1}), out_d = test::nan_device(gpu, {kDim * kHead, 1});
        kc_d = test::to_device(gpu, kc), vc_d = test::to_device(gpu, vc);
    }
    Step on_cpu() { return Step{test::cpu_backend(), tq.t, tk.t, tv.t, q.t, k.t, v.t, kc.t, vc.t, out.t, window}; }
    Step on_gpu(CudaBackend& gpu) {
        return Step{gpu, tq_d.tensor, tk_d.tensor, tv_d.tensor, q_d.tensor, k_d.tensor, v_d.tensor,
                    kc_d.tensor, vc_d.tensor, out_d.tensor, window};
    }
};

// Two sequences take turns on one backend (as a server's slots do), each with its own recording.
TEST(CudaStepGraph, ReplaysAtLaterPositionsLikeTheCpu) {
    STRATA_SKIP_WITHOUT_GPU();
    for (GgmlType cache_type : {GgmlType::F16, GgmlType::Q8_0}) {
        CudaBackend gpu(test::test_options());
        Sequence seqs[2] = {Sequence(gpu, cache_type), Sequence(gpu, cache_type)};
        EXPECT_FALSE(gpu.replay_step(&seqs[0], 0, 0)) << "nothing recorded yet";
        std::mt19937 rng(7);
        int32_t token = 0, position = 0;
        for (position = 0; position < kEager + kSteps; ++position) {
            for (Sequence& seq : seqs) {
                token = static_cast<int32_t>(rng() % kVocab);
                seq.on_cpu().run(&token, &position);
                Step gpu_step = seq.on_gpu(gpu);
                if (position < kEager) {
                    gpu_step.run(&token, &position);
                } else if (position == kEager || !gpu.replay_step(&seq, token, position)) {
                    EXPECT_EQ(position, kEager) << "a replay was refused with nothing changed";
                    gpu.begin_step_graph(&seq, &token, &position);
                    gpu_step.run(&token, &position);
                    gpu.end_graph();
                }
                EXPECT_LE(test::device_nmse(gpu, seq.out_d.tensor, seq.out), 1e-7)
                    << type_traits(cache_type).name << " sequence " << (&seq - seqs) << " position " << position
                    << " token " << token;
            }
        }
        EXPECT_EQ(gpu.graph_instantiations(), 2u);
        EXPECT_EQ(gpu.graph_launches(), static_cast<uint64_t>(2 * kSteps));

        // Attention over 5 tokens needs more partials than the step's: its scratch moves, and the
        // recordings (which name the old block) are no longer replayed.
        Sequence& s0 = seqs[0];
        const HostTensor q5 = cpu::test::random_f32({kDim, kHead, 5});
        DeviceTensor q5_d = test::to_device(gpu, q5), out5_d = test::nan_device(gpu, {kDim, kHead, 5});
        std::vector<int32_t> pos5 = {kCtx - 5, kCtx - 4, kCtx - 3, kCtx - 2, kCtx - 1};
        AttentionParams p;
        p.n_head = kHead;
        p.n_head_kv = kHeadKv;
        p.head_dim_k = p.head_dim_v = kDim;
        gpu.attention(q5_d.tensor, s0.kc_d.tensor, s0.vc_d.tensor, kCtx, pos5.data(), p, out5_d.tensor);
        gpu.synchronize();
        EXPECT_FALSE(gpu.replay_step(&seqs[0], token, position)) << "scratch moved since the recording";
        EXPECT_FALSE(gpu.replay_step(&seqs[1], token, position)) << "scratch moved since the recording";
    }
}

// One owner's step in two parts (as a decode step's GPU stretches between host work): each part
// is recorded once and replayed on its own, both reading the step's slot and keeping their own
// constants; a part never recorded is refused.
TEST(CudaStepGraph, ReplaysTheStepsPartsSeparately) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    Sequence seq(gpu, GgmlType::F16);
    std::mt19937 rng(11);
    int32_t token = 0, position = 0;
    for (position = 0; position < kEager + kSteps; ++position) {
        token = static_cast<int32_t>(rng() % kVocab);
        seq.on_cpu().run(&token, &position);
        Step gpu_step = seq.on_gpu(gpu);
        if (position < kEager) {
            gpu_step.run(&token, &position);
        } else {
            if (position == kEager || !gpu.replay_step({&seq, 1}, token, position)) {
                // Part 2's first recording splits the attention by the cache's capacity: its
                // larger scratch moves, and part 1 (recorded before) is recorded once more.
                EXPECT_LE(position, kEager + 1) << "part 1's replay was refused with nothing changed";
                gpu.begin_step_graph({&seq, 1}, &token, &position);
                gpu_step.head(&token, &position);
                gpu.end_graph();
            }
            if (position == kEager || !gpu.replay_step({&seq, 2}, token, position)) {
                EXPECT_EQ(position, kEager) << "part 2's replay was refused with nothing changed";
                gpu.begin_step_graph({&seq, 2}, &token, &position);
                gpu_step.tail(&position);
                gpu.end_graph();
            }
        }
        EXPECT_LE(test::device_nmse(gpu, seq.out_d.tensor, seq.out), 1e-7) << "position " << position;
    }
    EXPECT_EQ(gpu.graph_launches(), static_cast<uint64_t>(2 * kSteps));  // recorded or replayed, each launches once
    EXPECT_FALSE(gpu.replay_step({&seq, 3}, token, position)) << "part 3 was never recorded";
    EXPECT_FALSE(gpu.replay_step(&seq, token, position)) << "the whole step (part 0) was never recorded";
}

// A sliding-window layer's ring: window 12 in 13 cells, recorded at position kEager (past the
// ring already) and replayed while the positions wrap around it several times.
TEST(CudaStepGraph, ReplaysOverASlidingWindowRing) {
    STRATA_SKIP_WITHOUT_GPU();
    constexpr int32_t kWindow = 12;
    for (GgmlType cache_type : {GgmlType::F16, GgmlType::Q8_0}) {
        CudaBackend gpu(test::test_options());
        Sequence seq(gpu, cache_type, kWindow + 1, kWindow);
        std::mt19937 rng(11);
        for (int32_t position = 0; position < kEager + kSteps; ++position) {
            const int32_t token = static_cast<int32_t>(rng() % kVocab);
            seq.on_cpu().run(&token, &position);
            Step gpu_step = seq.on_gpu(gpu);
            if (position < kEager) {
                gpu_step.run(&token, &position);
            } else if (position == kEager || !gpu.replay_step(&seq, token, position)) {
                EXPECT_EQ(position, kEager) << "a replay was refused with nothing changed";
                gpu.begin_step_graph(&seq, &token, &position);
                gpu_step.run(&token, &position);
                gpu.end_graph();
            }
            EXPECT_LE(test::device_nmse(gpu, seq.out_d.tensor, seq.out), 1e-7)
                << type_traits(cache_type).name << " position " << position;
        }
        EXPECT_EQ(gpu.graph_launches(), static_cast<uint64_t>(kSteps));
        // The device ring holds the same bytes as the CPU's.
        const HostTensor kc = test::to_host(gpu, seq.kc_d.tensor);
        EXPECT_EQ(kc.bytes, seq.kc.bytes) << type_traits(cache_type).name;
    }
}

}  // namespace
}  // namespace strata::cuda
