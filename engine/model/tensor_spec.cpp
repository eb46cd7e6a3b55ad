// Expected-tensor lists and their check against a file's tensor table (see tensor_spec.h).
#include "engine/model/tensor_spec.h"

#include <charconv>
#include <unordered_set>

#include "engine/core/error.h"
#include "engine/gguf/model_file.h"
#include "engine/model/arch_spec.h"
#include "engine/model/model_config.h"
#include "quant/ggml_type.h"

namespace strata {

std::string shape_string(const std::vector<int64_t>& ne) {
    std::string s = "[";
    for (size_t i = 0; i < ne.size(); ++i)
        s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

void TensorListBuilder::global(std::string name, std::vector<int64_t> ne, std::string formula,
                               bool required, bool in_config) {
    const TensorRole role = tensor_name_info(name).role;
    out_.push_back({std::move(name), role, -1, std::move(ne), std::move(formula), required,
                    required || in_config});
}

void TensorListBuilder::layer(int il, std::string_view suffix, std::vector<int64_t> ne,
                              std::string formula, bool required, bool in_config) {
    std::string name = cat("blk.", il, ".", suffix);
    const TensorRole role = tensor_name_info(name).role;
    out_.push_back({std::move(name), role, il, std::move(ne), std::move(formula),
                    required, required || in_config});
}

void add_token_embd(const ModelConfig& c, TensorListBuilder& out) {
    out.global("token_embd.weight", {c.n_embd, c.n_vocab},
               "[n_embd, n_vocab]");
}

void add_output(const ModelConfig& c, TensorListBuilder& out) {
    out.global("output_norm.weight", {c.n_embd}, "[n_embd]");
    out.global("output.weight", {c.n_embd, c.n_vocab}, "[n_embd, n_vocab]",
               /*required=*/false, /*in_config=*/!c.tied_output);
}

void add_attention(const ModelConfig& c, int il, TensorListBuilder& out) {
    out.layer(il, "attn_q.weight", {c.n_embd, c.n_embd_q(il)},
              "[n_embd, n_head*head_dim_k]");
    out.layer(il, "attn_k.weight", {c.n_embd, c.n_embd_k_gqa(il)},
              "[n_embd, n_head_kv*head_dim_k]");
    out.layer(il, "attn_v.weight", {c.n_embd, c.n_embd_v_gqa(il)},
              "[n_embd, n_head_kv*head_dim_v]");
    out.layer(il, "attn_output.weight",
              {c.n_head.at(il) * c.head_dim_v, c.n_embd}, "[n_head*head_dim_v, n_embd]");
}

void add_gated_ffn(const ModelConfig& c, int il, TensorListBuilder& out) {
    int64_t n_ff = c.n_ff.at(il);
    out.layer(il, "ffn_gate.weight", {c.n_embd, n_ff}, "[n_embd, n_ff]");
    out.layer(il, "ffn_up.weight", {c.n_embd, n_ff}, "[n_embd, n_ff]");
    out.layer(il, "ffn_down.weight", {n_ff, c.n_embd}, "[n_ff, n_embd]");
}

void add_moe_ffn(const ModelConfig& c, int il, TensorListBuilder& out) {
    const MoeConfig& m = c.moe;
    out.layer(il, "ffn_gate_inp.weight", {c.n_embd, m.n_expert},
              "[n_embd, n_expert]");
    out.layer(il, "ffn_gate_exps.weight", {c.n_embd, m.n_ff_exp, m.n_expert},
              "[n_embd, n_ff_exp, n_expert]");
    out.layer(il, "ffn_up_exps.weight", {c.n_embd, m.n_ff_exp, m.n_expert},
              "[n_embd, n_ff_exp, n_expert]");
    out.layer(il, "ffn_down_exps.weight", {m.n_ff_exp, c.n_embd, m.n_expert},
              "[n_ff_exp, n_embd, n_expert]");
    if (m.n_ff_shexp == 0) return;
    if (m.shared_gate) {
        out.layer(il, "ffn_gate_inp_shexp.weight", {c.n_embd}, "[n_embd]");
    }
    out.layer(il, "ffn_gate_shexp.weight", {c.n_embd, m.n_ff_shexp},
              "[n_embd, n_ff_shexp]");
    out.layer(il, "ffn_up_shexp.weight", {c.n_embd, m.n_ff_shexp},
              "[n_embd, n_ff_shexp]");
    out.layer(il, "ffn_down_shexp.weight", {m.n_ff_shexp, c.n_embd},
              "[n_ff_shexp, n_embd]");
}

void add_ffn(const ModelConfig& c, int il, TensorListBuilder& out) {
    if (c.is_moe()) {
        add_moe_ffn(c, il, out);
    } else {
        add_gated_ffn(c, il, out);
    }
}

void add_qkv_bias(const ModelConfig& c, int il, bool required, TensorListBuilder& out) {
    bool in = c.has_qkv_bias;
    out.layer(il, "attn_q.bias", {c.n_embd_q(il)}, "[n_head*head_dim_k]",
              required, in);
    out.layer(il, "attn_k.bias", {c.n_embd_k_gqa(il)},
              "[n_head_kv*head_dim_k]", required, in);
    out.layer(il, "attn_v.bias", {c.n_embd_v_gqa(il)},
              "[n_head_kv*head_dim_v]", required, in);
}

void add_qk_norm(const ModelConfig& c, int il, TensorListBuilder& out) {
    out.layer(il, "attn_q_norm.weight", {c.head_dim_k}, "[head_dim_k]");
    out.layer(il, "attn_k_norm.weight", {c.head_dim_k}, "[head_dim_k]");
}

std::vector<TensorSpec> expected_tensors(const ModelConfig& config) {
    std::vector<TensorSpec> specs;
    TensorListBuilder builder(specs);
    arch_spec(config.architecture).list_tensors(config, builder);
    return specs;
}

namespace {

// Block index of a "blk.N.*" name, or -1 for anything else.
int64_t block_index(std::string_view name) {
    constexpr std::string_view kPrefix = "blk.";
    if (name.substr(0, kPrefix.size()) != kPrefix) return -1;
    std::string_view rest = name.substr(kPrefix.size());
    int64_t n = -1;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
    if (ec != std::errc() || end == rest.data()) return -1;
    return n;
}

bool same_shape(const TensorInfo& t, const std::vector<int64_t>& ne) {
    if (ne.size() > 4) return false;
    for (size_t i = 0; i < 4; ++i) {
        int64_t want = i < ne.size() ? ne[i] : 1;
        if (t.ne[i] != want) return false;
    }
    return true;
}

}  // namespace

void validate_tensors(const ModelFile& file, const ModelConfig& config) {
    std::vector<TensorSpec> specs = expected_tensors(config);
    for (const TensorSpec& spec : specs) {
        const TensorInfo* t = file.find_tensor(spec.name);
        if (t == nullptr) {
            if (!spec.required) continue;
            throw FormatError(cat(file.path(), ": missing required tensor '", spec.name, "' ",
                                  spec.shape_formula, " = ", shape_string(spec.ne), " of a ",
                                  config.architecture, " model with ", config.n_layer, " layers"));
        }
        if (!same_shape(*t, spec.ne)) {
            throw FormatError(cat(file.path(), ": tensor '", spec.name, "' has shape ",
                                  t->shape_string(), ", expected ", shape_string(spec.ne), " ",
                                  spec.shape_formula, " from the hyperparameters"));
        }
        if (type_traits(t->type).dequantize == nullptr) {
            throw UnsupportedError(cat(file.path(), ": tensor '", spec.name, "' has type ",
                                       type_traits(t->type).name, ", which Strata cannot compute with (supported: ",
                                       dequantizable_type_names(), ")"));
        }
    }
    for (const TensorInfo& t : file.tensors()) {
        int64_t il = block_index(t.name);
        if (il >= config.n_layer) {
            throw FormatError(cat(file.path(), ": unexpected tensor '", t.name, "': block ", il,
                                  " but block_count is ", config.n_layer));
        }
    }
}

}  // namespace strata
