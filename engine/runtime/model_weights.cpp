// Binding weights by name (model_weights.h).
#include "engine/runtime/model_weights.h"

#include <string>

#include "engine/core/error.h"
#include "engine/gguf/model_file.h"
#include "engine/model/fused_tensors.h"
#include "engine/model/model_config.h"

namespace strata {
namespace {

Tensor view_of(const TensorInfo& info) {
    const TypeTraits& traits = type_traits(info.type);
    Tensor t;
    t.type = info.type;
    t.ne = info.ne;
    t.nb[0] = traits.type_size;
    t.nb[1] = traits.type_size * static_cast<uint64_t>(info.ne[0] / traits.block_size);
    t.nb[2] = t.nb[1] * static_cast<uint64_t>(info.ne[1]);
    t.nb[3] = t.nb[2] * static_cast<uint64_t>(info.ne[2]);
    t.data = const_cast<uint8_t*>(info.data);  // read-only mapping; ops never write weights
    t.memory = MemoryKind::Host;
    return t;
}

Tensor optional_view(const ModelFile& file, const std::string& name) {
    const TensorInfo* info = file.find_tensor(name);
    return info ? view_of(*info) : Tensor{};
}

}  // namespace

Tensor expert_slice(const Tensor& exps, int64_t e) {
    STRATA_INVARIANT(e >= 0 && e < exps.ne[2] && exps.ne[3] == 1);
    Tensor t = exps;
    t.ne = {exps.ne[0], exps.ne[1], 1, 1};
    t.data = static_cast<uint8_t*>(exps.data) + static_cast<uint64_t>(e) * exps.nb[2];
    t.nb[2] = t.nb[1] * static_cast<uint64_t>(t.ne[1]);
    t.nb[3] = t.nb[2];
    return t;
}

Tensor tensor_view(const ModelFile& file, const char* name) {
    return view_of(file.tensor(name));
}

ModelWeights bind_weights(const ModelFile& file, const ModelConfig& config) {
    ModelWeights w;
    w.token_embd = tensor_view(file, "token_embd.weight");
    w.output_norm = tensor_view(file, "output_norm.weight");
    w.output = config.tied_output ? w.token_embd : tensor_view(file, "output.weight");
    w.rope_freqs = optional_view(file, "rope_freqs.weight");
    w.layers.resize(static_cast<size_t>(config.n_layer));
    for (int il = 0; il < config.n_layer; ++il) {
        auto get = [&](const char* suffix) {  // a fused weight (phi3) is a row view of its file tensor
            const WeightSource src = weight_source(config, il, suffix);
            const Tensor t = optional_view(file, src.tensor);
            return src.rows && present(t) ? t.rows(src.rows->first, src.rows->count) : t;
        };
        LayerWeights& l = w.layers[static_cast<size_t>(il)];
        l.attn_norm = get("attn_norm.weight");
        l.attn_q = get("attn_q.weight");
        l.attn_k = get("attn_k.weight");
        l.attn_v = get("attn_v.weight");
        l.attn_q_bias = get("attn_q.bias");
        l.attn_k_bias = get("attn_k.bias");
        l.attn_v_bias = get("attn_v.bias");
        l.attn_q_norm = get("attn_q_norm.weight");
        l.attn_k_norm = get("attn_k_norm.weight");
        l.attn_output = get("attn_output.weight");
        l.post_attention_norm = get("post_attention_norm.weight");
        l.ffn_norm = get("ffn_norm.weight");
        l.ffn_gate = get("ffn_gate.weight");
        l.ffn_up = get("ffn_up.weight");
        l.ffn_down = get("ffn_down.weight");
        l.post_ffw_norm = get("post_ffw_norm.weight");
        l.ffn_gate_inp = get("ffn_gate_inp.weight");
        l.ffn_gate_exps = get("ffn_gate_exps.weight");
        l.ffn_up_exps = get("ffn_up_exps.weight");
        l.ffn_down_exps = get("ffn_down_exps.weight");
        l.ffn_gate_shexp = get("ffn_gate_shexp.weight");
        l.ffn_up_shexp = get("ffn_up_shexp.weight");
        l.ffn_down_shexp = get("ffn_down_shexp.weight");
        l.ffn_gate_inp_shexp = get("ffn_gate_inp_shexp.weight");
        // ModelConfig::from_file checked these; a miss here is a spec/binding mismatch.
        for (const Tensor* t : {&l.attn_norm, &l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output, &l.ffn_norm})
            STRATA_INVARIANT(present(*t));
        if (config.is_moe()) {
            for (const Tensor* t : {&l.ffn_gate_inp, &l.ffn_gate_exps, &l.ffn_up_exps, &l.ffn_down_exps})
                STRATA_INVARIANT(present(*t));
            if (config.moe.n_ff_shexp > 0) {
                STRATA_INVARIANT(present(l.ffn_gate_shexp) && present(l.ffn_up_shexp) && present(l.ffn_down_shexp));
            }
        } else {
            for (const Tensor* t : {&l.ffn_gate, &l.ffn_up, &l.ffn_down}) STRATA_INVARIANT(present(*t));
        }
        if (config.has_qk_norm) STRATA_INVARIANT(present(l.attn_q_norm) && present(l.attn_k_norm));
        if (config.has_post_norms) {
            STRATA_INVARIANT(present(l.post_attention_norm) && present(l.post_ffw_norm));
        }
    }
    return w;
}

}  // namespace strata
