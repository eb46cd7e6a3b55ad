// JSON form of `strata inspect` (see inspect_report.h). Per-layer values are arrays with one
// entry per layer; sizes are plain numbers (bytes, elements).
#include "engine/gguf/gguf_value.h"
#include "engine/model/file_type.h"
#include "tools/inspect_report.h"

namespace strata::cli {
namespace {

using Json = nlohmann::ordered_json;

Json hparams_json(const ModelConfig& c) {
    const RopeConfig& r = c.rope;
    return Json{
        {"n_layer", c.n_layer},
        {"n_embd", c.n_embd},
        {"n_ff", c.n_ff},
        {"n_head", c.n_head},
        {"n_head_kv", c.n_head_kv},
        {"head_dim_k", c.head_dim_k},
        {"head_dim_v", c.head_dim_v},
        {"n_ctx_train", c.n_ctx_train},
        {"n_vocab", c.n_vocab},
        {"rms_eps", c.rms_eps},
        {"rope",
         {{"style", rope_style_name(r.style)},
          {"n_rot", r.n_rot},
          {"freq_base", r.freq_base},
          {"freq_base_swa", r.freq_base_swa},
          {"scaling", rope_scaling_name(r.scaling)},
          {"scaling_factor", r.scaling_factor},
          {"n_ctx_orig", r.n_ctx_orig},
          {"has_freq_factors", r.has_freq_factors}}},
        {"sliding_window", c.sliding_window},
        {"is_swa", c.is_swa},
        {"activation", activation_name(c.activation)},
        {"kq_scale", c.kq_scale},
        {"embd_scale", c.embd_scale},
        {"attn_logit_softcap", c.attn_logit_softcap},
        {"final_logit_softcap", c.final_logit_softcap},
        {"tied_output", c.tied_output},
        {"has_qk_norm", c.has_qk_norm},
        {"has_qkv_bias", c.has_qkv_bias},
        {"has_post_norms", c.has_post_norms},
    };
}

Json tokenizer_json(const InspectReport& report) {
    const TokenizerConfig& t = report.config.tokenizer;
    Json special = Json::object();
    for (auto [name, id] : {std::pair{"bos", t.special.bos}, std::pair{"eos", t.special.eos},
                            std::pair{"unk", t.special.unk}, std::pair{"pad", t.special.pad},
                            std::pair{"sep", t.special.sep}, std::pair{"eot", t.special.eot},
                            std::pair{"eom", t.special.eom}, std::pair{"mask", t.special.mask}}) {
        if (id >= 0) special[name] = {{"id", id}, {"text", report.token_text(id)}};
    }
    return Json{
        {"model", t.model},
        {"pre", t.pre},
        {"n_tokens", t.n_tokens},
        {"n_merges", t.n_merges},
        {"special", special},
        {"add_bos", t.add_bos},
        {"add_eos", t.add_eos},
        {"add_space_prefix", t.add_space_prefix},
        {"has_chat_template", t.has_chat_template},
    };
}

}  // namespace

Json inspect_json(const InspectReport& report, bool with_metadata) {
    const ModelFile& f = report.file;
    const ModelConfig& c = report.config;
    const ModelSummary& s = report.summary;
    Json j;
    j["file"] = {{"path", f.path()},
                 {"n_shards", f.n_shards()},
                 {"bytes", f.total_file_bytes()},
                 {"gguf_version", f.shard(0).version()},
                 {"n_keys", f.shard(0).metadata().size()}};
    j["general"] = {{"architecture", c.architecture},
                    {"name", c.name},
                    {"file_type", c.file_type},
                    {"file_type_name", file_type_name(c.file_type)}};
    j["hparams"] = hparams_json(c);
    if (c.is_moe()) {
        const ExpertSummary e = summarize_experts(f.tensors(), c);
        j["experts"] = {{"n_expert", c.moe.n_expert},         {"n_expert_used", c.moe.n_expert_used},
                        {"n_ff_exp", c.moe.n_ff_exp},         {"n_ff_shexp", c.moe.n_ff_shexp},
                        {"norm_topk", c.moe.norm_topk},       {"weights_scale", c.moe.weights_scale},
                        {"bytes_per_expert", e.bytes_per_expert}, {"expert_bytes", e.expert_bytes},
                        {"active_bytes", e.active_bytes},     {"active_params", e.active_params}};
    }
    j["tokenizer"] = tokenizer_json(report);
    Json tensors = Json::array();
    for (const TensorInfo& t : f.tensors()) {
        std::vector<int64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
        tensors.push_back({{"name", t.name},
                           {"type", type_traits(t.type).name},
                           {"shape", shape},
                           {"bytes", t.n_bytes}});
    }
    j["tensors"] = tensors;
    Json types = Json::array();
    for (const TypeUsage& u : s.by_type) {
        types.push_back({{"type", type_traits(u.type).name},
                         {"n_tensors", u.n_tensors},
                         {"n_params", u.n_elements},
                         {"bytes", u.n_bytes}});
    }
    j["types"] = types;
    j["totals"] = {{"n_tensors", s.n_tensors},
                   {"n_params", s.n_params},
                   {"bytes", s.n_bytes},
                   {"bits_per_weight", s.bits_per_weight()}};
    if (with_metadata) {
        Json meta = Json::object();
        for (const auto& [key, value] : f.shard(0).metadata()) {
            meta[key] = value.to_display_string();
        }
        j["metadata"] = meta;
    }
    return j;
}

}  // namespace strata::cli
