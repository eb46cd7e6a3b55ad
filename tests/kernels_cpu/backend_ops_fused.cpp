// The backend-ops cases of the fused ops (backend.h): add_rms_norm, attention_prologue and
// matmul_many. The reference runs each fused op's default (the ops it stands for, in order), so
// a backend's own fused kernel is checked against the unfused ops on the scalar CPU.
// attention_prologue's cases
// cover the layouts of real attention blocks: per-head norms (qwen3, gemma3), biases (qwen2),
// partial rotation with the NORM style and a head size no multiple of 32 (llama with
// rope_freqs-style factors), every KV cache type, a ring that wraps, and no caches (a batch of
// several sequences stores per sequence).
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/kernels_cpu/backend_ops_cases.h"

namespace strata::backend_ops {
namespace {

using Shared = std::shared_ptr<const HostTensor>;

Shared random_input(std::initializer_list<int64_t> ne, float lo = -1.0f, float hi = 1.0f) {
    return std::make_shared<const HostTensor>(cpu::test::random_f32(ne, lo, hi));
}

void append(std::vector<float>& out, const std::vector<float>& more) {
    out.insert(out.end(), more.begin(), more.end());
}

struct NormShape {
    const char* name;
    int64_t ne0, n;
};

// odd: a row length no multiple of 4 (the CUDA kernel's scalar path); decode: a hidden state.
const NormShape kNormShapes[] = {{"tiny", 32, 1}, {"odd", 67, 3}, {"decode", 2048, 1}, {"prefill17", 256, 17}};

constexpr GgmlType kNoCache = GgmlType::Q8_1;  // not a KV type: the case passes no caches

struct PrologueShape {
    const char* name;
    int64_t head_dim, n_rot, n_head, n_head_kv, head_dim_v, n;
    RopeStyle style;
    bool norms, biases, factors;
    GgmlType cache;  // kNoCache: no caches
    int64_t cells, first_cell;
};

const PrologueShape kPrologueShapes[] = {
    {"qwen3_decode_f16", 128, 128, 8, 2, 128, 1, RopeStyle::Neox, true, false, false, GgmlType::F16, 40, 5},
    {"qwen3_prefill17_q8_0", 128, 128, 4, 2, 128, 17, RopeStyle::Neox, true, false, false, GgmlType::Q8_0, 40, 3},
    {"qwen2_decode_q4_0", 64, 64, 14, 2, 64, 1, RopeStyle::Neox, false, true, false, GgmlType::Q4_0, 40, 21},
    {"gemma_decode_f32", 256, 256, 4, 1, 256, 1, RopeStyle::Neox, true, false, false, GgmlType::F32, 40, 39},
    {"llama_odd_f32", 80, 42, 3, 3, 80, 3, RopeStyle::Norm, false, false, true, GgmlType::F32, 40, 7},
    {"llama_odd_q4_0", 80, 42, 4, 2, 80, 3, RopeStyle::Norm, false, true, true, GgmlType::Q4_0, 40, 7},
    {"ring_q8_0", 64, 64, 4, 2, 32, 3, RopeStyle::Neox, true, true, false, GgmlType::Q8_0, 8, 14},
    {"no_cache_prefill17", 128, 128, 4, 2, 128, 17, RopeStyle::Neox, true, true, false, kNoCache, 0, 0},
};

// matmul_many's groups: weights as [k, n] per product, m tokens. CUDA batches a run of
// consecutive decode products with one type and shape (x3: all three; mixed: the two q6_K ones,
// the q4_K ones of different n apart); a prompt batch and f16 weights go one by one.
struct ManyCase {
    const char* name;
    std::vector<std::pair<GgmlType, int64_t>> weights;  // type, n
    int64_t k, m;
};

const ManyCase kManyCases[] = {
    {"q4_K_x3_decode", {{GgmlType::Q4_K, 67}, {GgmlType::Q4_K, 67}, {GgmlType::Q4_K, 67}}, 512, 1},
    {"mixed_decode", {{GgmlType::Q4_K, 64}, {GgmlType::Q4_K, 32}, {GgmlType::Q6_K, 48}, {GgmlType::Q6_K, 48}}, 256, 1},
    {"q4_0_prefill3", {{GgmlType::Q4_0, 33}, {GgmlType::Q4_0, 33}}, 96, 3},
    {"f16_decode", {{GgmlType::F16, 40}, {GgmlType::F16, 40}}, 64, 1},
};

// matmul_many over several weights of one input (the q/k/v and gate/up groups).
void add_matmul_many_cases(std::vector<OpCase>& out) {
    for (const ManyCase& c : kManyCases) {
        std::vector<Shared> ws;
        Bound bound{0.0, 0.0};
        for (const auto& [type, n] : c.weights) {
            ws.push_back(std::make_shared<const HostTensor>(random_weights(type, c.k, n)));
            const Bound b = matmul_bound(type);
            bound = {std::max(bound.cpu, b.cpu), std::max(bound.cuda, b.cuda)};
        }
        const Shared x = random_input({c.k, c.m});
        out.push_back({std::string("matmul_many_") + c.name, bound, [ws, x, c](OnBackend& on) {
                           const Tensor xd = on.put(*x);
                           std::vector<Tensor> wd, yd;
                           for (size_t i = 0; i < ws.size(); ++i) {
                               wd.push_back(on.put(*ws[i]));
                               yd.push_back(on.nan_f32({c.weights[i].second, c.m}));
                           }
                           std::vector<MatmulOut> outs;
                           for (size_t i = 0; i < ws.size(); ++i) outs.push_back({&wd[i], &yd[i]});
                           on.backend().matmul_many(xd, outs);
                           std::vector<float> got;
                           for (const Tensor& y : yd) append(got, on.read(y));
                           return got;
                       }});
    }
}

// add_rms_norm: the residual add and the next norm in one op.
void add_add_rms_norm_cases(std::vector<OpCase>& out) {
    // Variants: weighted; unweighted; with a post norm of delta (Gemma's sandwich norms).
    for (const NormShape& s : kNormShapes) {
        for (const char* variant : {"", "unweighted_", "post_norm_"}) {
            const bool weighted = variant[0] != 'u', post = variant[0] == 'p';
            const Shared x = random_input({s.ne0, s.n}, -2.0f, 2.0f);
            const Shared d = random_input({s.ne0, s.n});
            const Shared w = random_input({s.ne0}, 0.5f, 1.5f);
            const Shared pw = random_input({s.ne0}, 0.5f, 1.5f);
            out.push_back({std::string("add_rms_norm_") + variant + s.name,
                           {1e-10, 1e-7},
                           [x, d, w, pw, s, weighted, post](OnBackend& on) {
                               Tensor xd = on.put(*x), dd = on.put(*d);
                               const Tensor wd = on.put(*w), pwd = on.put(*pw);
                               Tensor y = on.nan_f32({s.ne0, s.n});
                               on.backend().add_rms_norm(xd, dd, post ? &pwd : nullptr, weighted ? &wd : nullptr, 1e-6f, y);
                               std::vector<float> got = on.read(xd);
                               append(got, on.read(y));
                               return got;
                           }});
        }
    }
}

// attention_prologue: biases, q/k norms, RoPE and the KV store in one op.
void add_prologue_cases(std::vector<OpCase>& out) {
    for (const PrologueShape& s : kPrologueShapes) {
        const int64_t q_row = s.head_dim * s.n_head, k_row = s.head_dim * s.n_head_kv, v_row = s.head_dim_v * s.n_head_kv;
        const Shared q = random_input({s.head_dim, s.n_head, s.n}, -2.0f, 2.0f);
        const Shared k = random_input({s.head_dim, s.n_head_kv, s.n}, -2.0f, 2.0f);
        const Shared v = random_input({v_row, s.n}, -2.0f, 2.0f);
        const Shared qb = random_input({q_row}), kb = random_input({k_row}), vb = random_input({v_row});
        const Shared qn = random_input({s.head_dim}, 0.5f, 1.5f), kn = random_input({s.head_dim}, 0.5f, 1.5f);
        const Shared factors = random_input({s.n_rot / 2}, 1.0f, 8.0f);
        const bool plain = s.cache == kNoCache || s.cache == GgmlType::F32 || s.cache == GgmlType::F16;
        // Quantized caches: CUDA's q and k differ from the CPU's in the last bits (another
        // summation order in the norm), which can move a value across a rounding boundary of
        // the 4- or 8-bit grid now and then; one such step is far below 1e-5 of these outputs.
        const Bound bound = plain ? Bound{1e-9, 1e-6} : Bound{1e-6, 1e-5};
        out.push_back({std::string("attention_prologue_") + s.name, bound, [=](OnBackend& on) {
                           Backend& b = on.backend();
                           AttentionPrologueArgs a;
                           a.q = on.put(*q);
                           a.k = on.put(*k);
                           a.v = on.put(*v);
                           const Tensor qbd = on.put(*qb), kbd = on.put(*kb), vbd = on.put(*vb);
                           const Tensor qnd = on.put(*qn), knd = on.put(*kn);
                           if (s.biases) a.q_bias = &qbd, a.k_bias = &kbd, a.v_bias = &vbd;
                           if (s.norms) a.q_norm = &qnd, a.k_norm = &knd;
                           a.eps = 1e-6f;
                           std::vector<int32_t> pos(static_cast<size_t>(s.n));
                           for (int64_t t = 0; t < s.n; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(s.first_cell + t);
                           a.positions = pos.data();
                           a.rope.n_rot = static_cast<int>(s.n_rot);
                           a.rope.freq_base = 10000.0f;
                           a.rope.style = s.style;
                           a.rope.freq_factors = s.factors ? factors->f32() : nullptr;
                           Tensor kc, vc;
                           if (s.cache != kNoCache) {
                               kc = on.put(HostTensor(s.cache, {k_row, s.cells}));  // 0xA5 bytes
                               vc = on.put(HostTensor(s.cache, {v_row, s.cells}));
                               a.k_cache = &kc;
                               a.v_cache = &vc;
                               a.first_cell = s.first_cell;
                           }
                           b.attention_prologue(a);
                           std::vector<float> got = on.read(a.q);
                           append(got, on.read(a.k));
                           append(got, on.read(a.v));
                           if (s.cache != kNoCache) {
                               append(got, on.read(kc));  // every cell: nothing else written
                               append(got, on.read(vc));
                           }
                           return got;
                       }});
    }
}

}  // namespace

void add_fused_cases(std::vector<OpCase>& out) {
    add_matmul_many_cases(out);
    add_add_rms_norm_cases(out);
    add_prologue_cases(out);
}

}  // namespace strata::backend_ops
