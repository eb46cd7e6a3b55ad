// The backend-ops cases of matmul, get_rows, the f32 row ops (combine_rows among them) and RoPE
// (shape classes and bounds: backend_ops.cpp). Inputs are drawn when the case is built and
// shared by every backend's run.
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/kernels_cpu/backend_ops_cases.h"

namespace strata::backend_ops {
namespace {

using Shared = std::shared_ptr<const HostTensor>;

Shared shared(HostTensor h) {
    return std::make_shared<const HostTensor>(std::move(h));
}

Shared random_f32(std::initializer_list<int64_t> ne, float lo = -1.0f, float hi = 1.0f) {
    return shared(cpu::test::random_f32(ne, lo, hi));
}

struct MatmulShape {
    const char* name;
    int64_t blocks;  // k in blocks of the type (in elements for plain types: then k = blocks + 1)
    int64_t n, m;
};

const MatmulShape kMatmulShapes[] = {
    {"tiny", 1, 4, 2},        {"odd", 3, 7, 3},         {"decode", 5, 67, 1},
    {"prefill17", 3, 33, 17}, {"prefill64", 3, 33, 64},
};

int64_t k_of(GgmlType type, int64_t blocks) {
    const int64_t block = type_traits(type).block_size;
    return block == 1 ? 32 * blocks + 1 : block * blocks;
}

const char* act_name(Activation act) {
    return act == Activation::Silu ? "silu" : "gelu_tanh";
}

}  // namespace

void add_matmul_cases(std::vector<OpCase>& out) {
    for (GgmlType type : weight_types()) {
        for (const MatmulShape& s : kMatmulShapes) {
            const int64_t k = k_of(type, s.blocks);
            const Shared w = shared(random_weights(type, k, s.n));
            const Shared x = random_f32({k, s.m});
            OpCase c{type_name(type) + "_" + s.name, matmul_bound(type),
                     [w, x, n = s.n, m = s.m](OnBackend& on) {
                         const Tensor wd = on.put(*w), xd = on.put(*x);
                         Tensor y = on.nan_f32({n, m});
                         on.backend().matmul(wd, xd, y);
                         return on.read(y);
                     }};
            c.pool = type_name(type);  // the 8-bit activation bound is statistical
            out.push_back(std::move(c));
        }
    }
}

void add_get_rows_cases(std::vector<OpCase>& out) {
    for (GgmlType type : weight_types()) {
        const Shared table = shared(random_weights(type, k_of(type, 3), 7));
        out.push_back({type_name(type), {0.0, 0.0}, [table](OnBackend& on) {
                           const int32_t ids[] = {6, 0, 3, 3, 5};
                           const Tensor t = on.put(*table);
                           Tensor y = on.nan_f32({table->t.ne[0], 5});
                           on.backend().get_rows(t, ids, 5, y);
                           return on.read(y);
                       }});
    }
}

void add_row_op_cases(std::vector<OpCase>& out) {
    const Bound f32_ops{1e-10, 1e-7};
    struct Rows {
        const char* name;
        int64_t ne0, rows;
    };
    for (const Rows& s : {Rows{"tiny", 7, 1}, Rows{"odd", 127, 5}, Rows{"decode", 4097, 1},
                          Rows{"prefill17", 768, 17}}) {
        const std::string at = std::string("_") + s.name;
        const Shared x = random_f32({s.ne0, s.rows}, -3.0f, 3.0f),
                     w = random_f32({s.ne0}, 0.5f, 2.0f);
        const Shared b = random_f32({s.ne0, s.rows}), bias = random_f32({s.ne0});
        const int64_t ne0 = s.ne0, rows = s.rows;
        out.push_back({"rms_norm" + at, f32_ops, [=](OnBackend& on) {
                           const Tensor xd = on.put(*x), wd = on.put(*w);
                           Tensor y = on.nan_f32({ne0, rows});
                           on.backend().rms_norm(xd, &wd, 1e-6f, y);
                           return on.read(y);
                       }});
        out.push_back({"rms_norm_in_place_no_weight" + at, f32_ops, [=](OnBackend& on) {
                           Tensor xd = on.put(*x);
                           on.backend().rms_norm(xd, nullptr, 1e-5f, xd);
                           return on.read(xd);
                       }});
        out.push_back({"add" + at, f32_ops, [=](OnBackend& on) {
                           const Tensor xd = on.put(*x), bd = on.put(*b), biasd = on.put(*bias);
                           Tensor y = on.nan_f32({ne0, rows}), y2 = on.nan_f32({ne0, rows});
                           on.backend().add(xd, bd, y);
                           on.backend().add(y, biasd, y2);  // one row broadcast
                           return on.read(y2);
                       }});
        out.push_back({"scale_softcap" + at, f32_ops, [=](OnBackend& on) {
                           Tensor xd = on.put(*x);
                           on.backend().scale(xd, 7.5f);
                           on.backend().softcap(xd, 10.0f);  // |x| up to 22.5: the cap bends
                           return on.read(xd);
                       }});
        // Column t sums (t % 3) entries of rows (5t + 3j) % 9: empty columns, repeats.
        const Shared slots = random_f32({ne0, 9});
        out.push_back({"combine_rows" + at, f32_ops, [=](OnBackend& on) {
                           std::vector<int32_t> offsets{0}, ids;
                           std::vector<float> weights;
                           for (int64_t t = 0; t < rows; ++t) {
                               for (int64_t j = 0; j < t % 3; ++j) {
                                   ids.push_back(static_cast<int32_t>((5 * t + 3 * j) % 9));
                                   weights.push_back(0.25f + 0.5f * static_cast<float>(j) - 0.1f * static_cast<float>(t % 4));
                               }
                               offsets.push_back(static_cast<int32_t>(ids.size()));
                           }
                           const Tensor xd = on.put(*slots);
                           Tensor y = on.nan_f32({ne0, rows});
                           on.backend().combine_rows(xd, {offsets.data(), ids.data(), weights.data()}, y);
                           return on.read(y);
                       }});
        for (Activation act : {Activation::Silu, Activation::GeluTanh}) {
            const Shared g = random_f32({ne0, rows}, -8.0f, 8.0f);
            out.push_back({std::string("gated_") + act_name(act) + at, f32_ops, [=](OnBackend& on) {
                               Tensor gd = on.put(*g);
                               const Tensor ud = on.put(*b);
                               on.backend().gated_activation(gd, ud, act, gd);  // in place on gate
                               return on.read(gd);
                           }});
        }
    }
}

void add_rope_cases(std::vector<OpCase>& out) {
    struct RopeShape {
        const char* name;
        int64_t head_dim, n_rot, n_heads, n_tokens;
        int32_t first_pos;
    };
    const RopeShape shapes[] = {
        {"tiny", 64, 64, 1, 1, 0},
        {"odd", 80, 42, 3, 5, 7},  // partial rotation: dims 42..79 pass
        {"decode", 128, 128, 8, 1, 900},
        {"prefill17", 256, 256, 2, 17, 40},
    };
    for (const RopeShape& s : shapes) {
        for (RopeStyle style : {RopeStyle::Norm, RopeStyle::Neox}) {
            for (bool factors : {false, true}) {
                const Shared x = random_f32({s.head_dim, s.n_heads, s.n_tokens});
                const Shared f = random_f32({s.n_rot / 2}, 1.0f, 8.0f);
                std::string name = std::string("rope_") +
                                   (style == RopeStyle::Neox ? "neox" : "norm") +
                                   (factors ? "_factors_" : "_") + s.name;
                out.push_back({name, {1e-9, 1e-7}, [=](OnBackend& on) {
                                   std::vector<int32_t> pos(static_cast<size_t>(s.n_tokens));
                                   for (int64_t t = 0; t < s.n_tokens; ++t)
                                       pos[t] = s.first_pos + static_cast<int32_t>(3 * t);
                                   RopeParams p;
                                   p.n_rot = static_cast<int>(s.n_rot);
                                   p.freq_base = 500000.0f;
                                   p.freq_scale = 0.5f;
                                   p.style = style;
                                   p.freq_factors = factors ? f->f32() : nullptr;  // a host array
                                   Tensor xd = on.put(*x);
                                   on.backend().rope(xd, pos.data(), p);
                                   return on.read(xd);
                               }});
            }
        }
    }
}

// A decode token's experts as one op (expert_ffn), added to a nonzero y: the type pairs of real
// MoE files, a call mixing types (the CUDA backend then runs its experts one by one), f16 (no
// integer kernel), more experts than one batched launch takes (16), and none. Two roundings of
// the activations to 8 bits (x, then h) where the type has an integer kernel; h = silu(g)·u is
// peaky (a block's largest value sets its step), so its rounding costs more than x's: pooled
// NMSE 2.1e-4 on the CPU's AVX2 and scalar integer paths, against 5e-4.
void add_expert_cases(std::vector<OpCase>& out) {
    struct ExpertCase {
        const char* name;
        std::vector<std::pair<GgmlType, GgmlType>> experts;  // (gate and up, down) per expert
        int64_t n_embd, width;
    };
    const auto q4k = std::pair{GgmlType::Q4_K, GgmlType::Q6_K};
    const auto q8 = std::pair{GgmlType::Q8_0, GgmlType::Q8_0};
    const std::vector<ExpertCase> cases = {
        {"q4_K_q6_K_x8", std::vector(8, q4k), 512, 256},
        {"q8_0_x2", {q8, q8}, 64, 96},
        {"iq4_xs_q4_K_x3", std::vector(3, std::pair{GgmlType::IQ4_XS, GgmlType::Q4_K}), 256, 256},
        {"mixed_x3", {q4k, q8, q4k}, 256, 256},
        {"f16_x2", std::vector(2, std::pair{GgmlType::F16, GgmlType::F16}), 64, 96},
        {"q4_0_x20", std::vector(20, std::pair{GgmlType::Q4_0, GgmlType::Q4_0}), 64, 64},
        {"none", {}, 64, 64},
    };
    for (const ExpertCase& c : cases) {
        auto weights = std::make_shared<std::vector<HostTensor>>();
        std::vector<float> router;
        for (const auto& [gate_up, down] : c.experts) {
            weights->push_back(random_weights(gate_up, c.n_embd, c.width));
            weights->push_back(random_weights(gate_up, c.n_embd, c.width));
            weights->push_back(random_weights(down, c.width, c.n_embd));
            router.push_back(cpu::test::uniform(0.05f, 1.0f));
        }
        const Shared x = random_f32({c.n_embd, 1}), y0 = random_f32({c.n_embd, 1});
        const bool f16 = !c.experts.empty() && c.experts[0].first == GgmlType::F16;
        OpCase oc{std::string("expert_ffn_") + c.name, f16 ? Bound{1e-9, 1e-6} : Bound{5e-4, 5e-4},
                  [=](OnBackend& on) {
                      std::vector<Tensor> mats;
                      for (const HostTensor& w : *weights) mats.push_back(on.put(w));
                      std::vector<ExpertRef> refs;
                      for (size_t j = 0; j < router.size(); ++j)
                          refs.push_back({&mats[3 * j], &mats[3 * j + 1], &mats[3 * j + 2], router[j]});
                      const Tensor xd = on.put(*x);
                      Tensor y = on.put(*y0);
                      on.backend().expert_ffn({&xd, refs, Activation::Silu}, y);
                      return on.read(y);
                  }};
        if (!f16) oc.pool = "experts";
        out.push_back(std::move(oc));
    }
}

// A decode token's routing and its experts as one op (routed_expert_ffn), y overwritten (it
// starts NaN): top-8 of 64 and top-2 of 8 (qwen3-30b-a3b's and Mixtral's kind), top-4 of 128
// without renormalising and scaled, top-20 of 24 (more than one batched launch). The logits
// spread over [-4, 4] so that no two of the top k+1 sit within rounding of each other: every
// backend must choose the same experts, and a wrong choice moves the output far past the bound.
void add_routed_expert_cases(std::vector<OpCase>& out) {
    struct RoutedCase {
        const char* name;
        std::pair<GgmlType, GgmlType> types;  // (gate and up, down)
        int64_t n_embd, width, n_expert, k;
        bool norm;
        float scale;
    };
    const auto q4k = std::pair{GgmlType::Q4_K, GgmlType::Q6_K};
    const auto q8 = std::pair{GgmlType::Q8_0, GgmlType::Q8_0};
    const auto q4_0 = std::pair{GgmlType::Q4_0, GgmlType::Q4_0};
    const std::vector<RoutedCase> cases = {
        {"q4_K_q6_K_64_top8", q4k, 256, 256, 64, 8, true, 1.0f},
        {"q4_K_q6_K_8_top2", q4k, 512, 256, 8, 2, true, 1.0f},
        {"q8_0_128_top4_scaled", q8, 64, 32, 128, 4, false, 2.5f},
        {"q4_0_24_top20", q4_0, 64, 64, 24, 20, true, 1.0f},
    };
    for (const RoutedCase& c : cases) {
        auto weights = std::make_shared<std::vector<HostTensor>>();
        for (int64_t e = 0; e < c.n_expert; ++e) {
            weights->push_back(random_weights(c.types.first, c.n_embd, c.width));
            weights->push_back(random_weights(c.types.first, c.n_embd, c.width));
            weights->push_back(random_weights(c.types.second, c.width, c.n_embd));
        }
        const Shared x = random_f32({c.n_embd, 1}), logits = random_f32({c.n_expert, 1}, -4.0f, 4.0f);
        OpCase oc{std::string("routed_expert_ffn_") + c.name, Bound{5e-4, 5e-4}, [=](OnBackend& on) {
                      std::vector<Tensor> mats;
                      for (const HostTensor& w : *weights) mats.push_back(on.put(w));
                      std::vector<ExpertRef> refs;
                      for (size_t j = 0; j < mats.size(); j += 3) refs.push_back({&mats[j], &mats[j + 1], &mats[j + 2], 0.0f});
                      if (!on.backend().routes_experts(refs, c.k, Activation::Silu)) {
                          throw UnsupportedError(cat(on.backend().name(), " does not route these experts"));
                      }
                      const Tensor xd = on.put(*x), ld = on.put(*logits);
                      Tensor y = on.nan_f32({c.n_embd, 1});
                      on.backend().routed_expert_ffn({&xd, &ld, refs, {c.k, c.norm, c.scale}, Activation::Silu}, y);
                      return on.read(y);
                  }};
        oc.pool = "routed_experts";
        out.push_back(std::move(oc));
    }
}

}  // namespace strata::backend_ops
