// The backend-ops cases of the KV cache and the sparse FFN: kv_store and attention for every KV
// cache type (f32, f16, q8_0, q4_0: what --ctk takes), also as a batched decode step of three
// sequences with caches of their own (kv_store_rows, attention_rows), thresholded activation and
// sparse FFN.
// Attention reads caches whose bytes quant/'s reference quantizer wrote, so only the attention
// arithmetic is compared; kv_store's conversion is its own case.
#include <cmath>
#include <memory>
#include <string>

#include "tests/kernels_cpu/backend_ops_cases.h"

namespace strata::backend_ops {
namespace {

using Shared = std::shared_ptr<const HostTensor>;

const GgmlType kKvTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0};

// [row, cells] of `type` from random floats through quant/'s reference quantizer.
Shared random_cache(GgmlType type, int64_t row, int64_t cells) {
    HostTensor c(type, {row, cells});
    std::vector<float> f(static_cast<size_t>(row));
    for (int64_t i = 0; i < cells; ++i) {
        cpu::test::fill_uniform(f.data(), row, -2.0f, 2.0f);
        type_traits(type).quantize(f.data(), static_cast<uint8_t*>(c.t.data) + i * c.t.nb[1], row);
    }
    return std::make_shared<const HostTensor>(std::move(c));
}

struct AttentionShape {
    const char* name;
    int n_head, n_head_kv, head_dim_k, head_dim_v;
    int64_t n_tokens, n_cells;
    int32_t window;
    float softcap;
};

// tiny: one query over one cell; decode: GQA 8/2 over 37 cells; odd: MQA with K and V of
// different head sizes, a sliding window; prefill: 17 queries over the last cells, softcap.
const AttentionShape kAttentionShapes[] = {
    {"tiny", 1, 1, 32, 32, 1, 1, 0, 0.0f},
    {"decode", 8, 2, 64, 64, 1, 37, 0, 0.0f},
    {"odd", 6, 1, 64, 32, 3, 29, 7, 0.0f},
    {"prefill17", 4, 2, 128, 128, 17, 40, 0, 30.0f},
};

}  // namespace

void add_kv_cases(std::vector<OpCase>& out) {
    for (GgmlType type : kKvTypes) {
        for (int64_t n : {1, 17}) {
            const Shared src =
                std::make_shared<const HostTensor>(cpu::test::random_f32({256, n}, -4.0f, 4.0f));
            out.push_back(
                {type_name(type) + (n == 1 ? "_decode" : "_prefill17"),
                 {0.0, 0.0},
                 [src, type, n](OnBackend& on) {
                     HostTensor cache(type, {256, 40});  // 0xA5 bytes outside the rows written
                     Tensor cd = on.put(cache);
                     on.backend().kv_store(on.put(*src), cd, 3);
                     return on.read(cd.rows(3, n));
                 }});
        }
        // A batched decode step: row i into sequence i's caches, at positions 3, 39 (the last
        // cell) and 57 (a ring of 40 cells: cell 17).
        const Shared k = std::make_shared<const HostTensor>(cpu::test::random_f32({256, 3}, -4.0f, 4.0f));
        const Shared v = std::make_shared<const HostTensor>(cpu::test::random_f32({128, 3}, -4.0f, 4.0f));
        out.push_back({type_name(type) + "_rows3", {0.0, 0.0}, [k, v, type](OnBackend& on) {
                           const int32_t pos[3] = {3, 39, 57};
                           std::vector<Tensor> caches;
                           for (int i = 0; i < 3; ++i) {
                               caches.push_back(on.put(HostTensor(type, {256, 40})));
                               caches.push_back(on.put(HostTensor(type, {128, 40})));
                           }
                           std::vector<SequenceKv> seqs;
                           for (int i = 0; i < 3; ++i) seqs.push_back({&caches[2 * i], &caches[2 * i + 1], pos[i]});
                           on.backend().kv_store_rows(on.put(*k), on.put(*v), seqs);
                           std::vector<float> r;
                           for (int i = 0; i < 3; ++i) {
                               for (const Tensor* c : {seqs[i].k_cache, seqs[i].v_cache}) {
                                   const std::vector<float> row = on.read(c->rows(pos[i] % 40, 1));
                                   r.insert(r.end(), row.begin(), row.end());
                               }
                           }
                           return r;
                       }});
    }
}

void add_attention_cases(std::vector<OpCase>& out) {
    for (GgmlType type : kKvTypes) {
        for (const AttentionShape& s : kAttentionShapes) {
            const Shared k = random_cache(type, int64_t{s.head_dim_k} * s.n_head_kv, s.n_cells);
            const Shared v = random_cache(type, int64_t{s.head_dim_v} * s.n_head_kv, s.n_cells);
            const Shared q = std::make_shared<const HostTensor>(
                cpu::test::random_f32({s.head_dim_k, s.n_head, s.n_tokens}, -2.0f, 2.0f));
            // CUDA's prefill (more than 8 tokens) runs on tensor cores with Q, K, V and P rounded
            // to f16, as its f16 cuBLAS products round their operands.
            const Bound bound{1e-9, s.n_tokens > 8 ? 1e-6 : 1e-7};
            out.push_back(
                {type_name(type) + "_" + s.name, bound, [k, v, q, s](OnBackend& on) {
                     std::vector<int32_t> pos(static_cast<size_t>(s.n_tokens));
                     for (int64_t t = 0; t < s.n_tokens; ++t)
                         pos[t] = static_cast<int32_t>(s.n_cells - s.n_tokens + t);
                     const AttentionParams p{s.n_head,
                                             s.n_head_kv,
                                             s.head_dim_k,
                                             s.head_dim_v,
                                             1.0f / std::sqrt(static_cast<float>(s.head_dim_k)),
                                             s.window,
                                             s.softcap};
                     const Tensor qd = on.put(*q), kd = on.put(*k), vd = on.put(*v);
                     Tensor o = on.nan_f32({s.head_dim_v, s.n_head, s.n_tokens});
                     on.backend().attention(qd, kd, vd, s.n_cells, pos.data(), p, o);
                     return on.read(o);
                 }});
        }
        // A batched decode step of three sequences, each over its own cache up to its position:
        // the decode shape (GQA 8/2) and the odd one (MQA, K and V heads of different sizes, a
        // sliding window).
        for (const AttentionShape& s : {kAttentionShapes[1], kAttentionShapes[2]}) {
            std::vector<Shared> caches;
            for (int i = 0; i < 3; ++i) {
                caches.push_back(random_cache(type, int64_t{s.head_dim_k} * s.n_head_kv, s.n_cells));
                caches.push_back(random_cache(type, int64_t{s.head_dim_v} * s.n_head_kv, s.n_cells));
            }
            const Shared q = std::make_shared<const HostTensor>(
                cpu::test::random_f32({s.head_dim_k, s.n_head, 3}, -2.0f, 2.0f));
            out.push_back(
                {type_name(type) + "_" + s.name + "_rows3", {1e-9, 1e-7}, [caches, q, s](OnBackend& on) {
                     const int32_t pos[3] = {static_cast<int32_t>(s.n_cells - 1), 5, static_cast<int32_t>(s.n_cells / 2)};
                     const AttentionParams p{s.n_head,     s.n_head_kv, s.head_dim_k, s.head_dim_v,
                                             1.0f / std::sqrt(static_cast<float>(s.head_dim_k)), s.window, s.softcap};
                     std::vector<Tensor> kv;
                     for (const Shared& c : caches) kv.push_back(on.put(*c));
                     std::vector<SequenceKv> seqs;
                     for (int i = 0; i < 3; ++i) seqs.push_back({&kv[2 * i], &kv[2 * i + 1], pos[i]});
                     Tensor o = on.nan_f32({s.head_dim_v, s.n_head, 3});
                     on.backend().attention_rows(on.put(*q), seqs, p, o);
                     return on.read(o);
                 }});
        }
    }
}

// The kept count is appended to the output as a float (exact below 2^24) and compared exactly
// by the test (OpCase::sparse).
void add_sparse_cases(std::vector<OpCase>& out) {
    const int64_t n_embd = 256, n_ff = 352;
    for (int64_t n : {1, 3}) {
        const std::string at = n == 1 ? "_decode" : "_odd";
        const Shared gate =
            std::make_shared<const HostTensor>(cpu::test::random_f32({n_ff, n}, -3.0f, 3.0f));
        const Shared up_x = std::make_shared<const HostTensor>(cpu::test::random_f32({n_ff, n}));
        for (Activation act : {Activation::Silu, Activation::GeluTanh}) {
            OpCase c{
                std::string("thresholded_") + (act == Activation::Silu ? "silu" : "gelu_tanh") + at,
                {1e-10, 1e-7},
                [=](OnBackend& on) {
                    const Tensor g = on.put(*gate), u = on.put(*up_x);
                    Tensor y = on.nan_f32({n_ff, n});
                    const int64_t kept =
                        on.backend().thresholded_gated_activation(g, u, act, 0.4f, y);
                    std::vector<float> r = on.read(y);
                    r.push_back(static_cast<float>(kept));
                    return r;
                }};
            c.sparse = true;
            out.push_back(std::move(c));
        }
        for (GgmlType up_type : {GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::F16}) {
            const Shared x = std::make_shared<const HostTensor>(cpu::test::random_f32({n_embd, n}));
            const Shared up =
                std::make_shared<const HostTensor>(random_weights(up_type, n_embd, n_ff));
            const Shared down_t =
                std::make_shared<const HostTensor>(random_weights(GgmlType::Q8_0, n_embd, n_ff));
            OpCase c{"ffn_" + type_name(up_type) + at, matmul_bound(up_type), [=](OnBackend& on) {
                         const Tensor g = on.put(*gate), xd = on.put(*x), ud = on.put(*up),
                                      dd = on.put(*down_t);
                         Tensor y = on.nan_f32({n_embd, n});
                         const SparseFfnArgs args{&g, &xd, &ud, &dd, Activation::Silu, 0.4f};
                         const int64_t active = on.backend().sparse_gated_ffn(args, y);
                         std::vector<float> r = on.read(y);
                         r.push_back(static_cast<float>(active));
                         return r;
                     }};
            c.sparse = true;
            out.push_back(std::move(c));
        }
    }
}

}  // namespace strata::backend_ops
