// strata inspect: validates a model and prints its architecture, hyperparameters, tokenizer,
// tensor table and size per type, as text or (--json) as JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "engine/core/error.h"
#include "engine/gguf/gguf_value.h"
#include "engine/model/arch_spec.h"
#include "engine/model/file_type.h"
#include "engine/model/gguf_keys.h"
#include "engine/core/byte_size.h"
#include "tools/commands.h"
#include "tools/inspect_report.h"

namespace strata::cli {

std::string InspectReport::token_text(int64_t id) const {
    const GgufValue* tokens = file.find(keys::kTokTokens);
    if (id < 0 || tokens == nullptr || !tokens->is_array() ||
        tokens->array_type() != GgufType::STRING ||
        static_cast<uint64_t>(id) >= tokens->array_size()) {
        return "";
    }
    return tokens->as_strings(keys::kTokTokens)[static_cast<size_t>(id)];
}

namespace {

struct InspectArgs {
    std::string model;
    bool json = false;
    bool metadata = false;
};

// "2048" when every layer has the same value, else "[2048, 4096, ...]".
std::string per_layer(const std::vector<int64_t>& v) {
    if (std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; })) {
        return std::to_string(v.at(0));
    }
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "] (per layer)";
}

std::string yes_no(bool b) {
    return b ? "yes" : "no";
}

// Integral values in full ("1000000"), others with 6 significant digits.
std::string number(double v) {
    char buf[32];
    if (v == static_cast<double>(static_cast<int64_t>(v)) && std::fabs(v) < 1e15) {
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    } else {
        std::snprintf(buf, sizeof buf, "%.6g", v);
    }
    return buf;
}

// "268.10 M", "6.74 B"
std::string count(int64_t n) {
    char buf[32];
    double v = static_cast<double>(n);
    if (v >= 1e9)
        std::snprintf(buf, sizeof buf, "%.2f B", v / 1e9);
    else if (v >= 1e6)
        std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.2f K", v / 1e3);
    return buf;
}

std::string special_token(const InspectReport& r, int64_t id) {
    if (id < 0) return "-";
    return std::to_string(id) + " '" + r.token_text(id) + "'";
}

void row(const char* name, const std::string& value) {
    std::printf("  %-16s %s\n", name, value.c_str());
}

void print_hparams(const ModelConfig& c) {
    const RopeConfig& r = c.rope;
    std::printf("hyperparameters\n");
    row("n_layer", std::to_string(c.n_layer));
    row("n_embd", std::to_string(c.n_embd));
    row("n_ff", per_layer(c.n_ff));
    row("n_head", per_layer(c.n_head));
    row("n_head_kv", per_layer(c.n_head_kv));
    row("head_dim", cat(c.head_dim_k, " (k), ", c.head_dim_v, " (v)"));
    row("n_ctx_train", std::to_string(c.n_ctx_train));
    row("n_vocab", std::to_string(c.n_vocab));
    row("rms_eps", number(c.rms_eps));
    row("rope", cat(rope_style_name(r.style), ", n_rot ", r.n_rot, ", base ", number(r.freq_base),
                    c.sliding_window > 0 ? ", swa base " + number(r.freq_base_swa) : "",
                    ", scaling ", rope_scaling_name(r.scaling),
                    r.scaling != RopeScaling::None ? " x" + number(r.scaling_factor) : "",
                    r.has_freq_factors ? ", rope_freqs" : ""));
    if (c.sliding_window > 0) {
        auto n_local = std::count(c.is_swa.begin(), c.is_swa.end(), true);
        row("sliding window", cat(c.sliding_window, " (", n_local, " local, ", c.n_layer - n_local,
                                  " global layers)"));
    }
    row("activation", std::string(activation_name(c.activation)));
    row("kq_scale", number(c.kq_scale));
    if (c.embd_scale != 1.0) row("embd_scale", number(c.embd_scale));
    if (c.final_logit_softcap > 0) row("logit softcap", number(c.final_logit_softcap));
    if (c.attn_logit_softcap > 0) row("attn softcap", number(c.attn_logit_softcap));
    row("output", c.tied_output ? "tied to token_embd" : "output.weight");
    std::string features;
    for (auto [on, name] : {std::pair{c.has_qk_norm, "qk_norm"},
                            {c.has_qkv_bias, "qkv_bias"},
                            {c.has_post_norms, "post_norms"}}) {
        if (on) features += (features.empty() ? "" : ", ") + std::string(name);
    }
    row("features", features.empty() ? "-" : features);
}

void print_experts(const InspectReport& r) {
    const ModelConfig& c = r.config;
    if (!c.is_moe()) return;
    const ExpertSummary e = summarize_experts(r.file.tensors(), c);
    std::printf("experts\n");
    row("count", cat(c.moe.n_expert, " per layer, ", c.moe.n_expert_used, " active per token"));
    row("expert n_ff", std::to_string(c.moe.n_ff_exp));
    if (c.moe.n_ff_shexp > 0) row("shared expert", cat("n_ff ", c.moe.n_ff_shexp, c.moe.shared_gate ? ", sigmoid gate" : ""));
    row("routing", cat("softmax, top-", c.moe.n_expert_used, c.moe.norm_topk ? ", renormalised" : "",
                       c.moe.weights_scale != 1.0 ? ", x" + number(c.moe.weights_scale) : ""));
    row("bytes/expert", cat(format_bytes(e.bytes_per_expert), " (gate+up+down of one layer); all experts ",
                            format_bytes(e.expert_bytes)));
    row("active/token", cat(count(e.active_params), " params, ", format_bytes(e.active_bytes)));
}

void print_tokenizer(const InspectReport& r) {
    const TokenizerConfig& t = r.config.tokenizer;
    std::printf("tokenizer\n");
    std::string kind = t.model == "llama" ? " (SPM)" : t.model == "gpt2" ? " (BPE)" : "";
    row("model", t.model + kind + (t.pre.empty() ? "" : ", pre '" + t.pre + "'"));
    row("tokens", cat(t.n_tokens, t.n_merges > 0 ? cat(", ", t.n_merges, " merges") : ""));
    row("bos", special_token(r, t.special.bos));
    row("eos", special_token(r, t.special.eos));
    if (t.special.eot >= 0) row("eot", special_token(r, t.special.eot));
    if (t.special.unk >= 0) row("unk", special_token(r, t.special.unk));
    if (t.special.pad >= 0) row("pad", special_token(r, t.special.pad));
    row("add_bos", yes_no(t.add_bos));
    row("add_eos", yes_no(t.add_eos));
    row("add_space", yes_no(t.add_space_prefix));
    row("chat template", yes_no(t.has_chat_template));
}

void print_tensors(const ModelFile& f) {
    size_t width = 4;
    for (const TensorInfo& t : f.tensors())
        width = std::max(width, t.name.size());
    std::printf("tensors\n  %-*s  %-7s  %-16s  %12s\n", static_cast<int>(width), "name", "type",
                "shape", "bytes");
    for (const TensorInfo& t : f.tensors()) {
        std::printf("  %-*s  %-7s  %-16s  %12s\n", static_cast<int>(width), t.name.c_str(),
                    std::string(type_traits(t.type).name).c_str(), t.shape_string().c_str(),
                    format_bytes(t.n_bytes).c_str());
    }
}

void print_types(const ModelSummary& s) {
    std::printf("bytes per type\n  %-7s  %8s  %14s  %12s  %6s\n", "type", "tensors", "params",
                "bytes", "share");
    for (const TypeUsage& u : s.by_type) {
        double share = s.n_bytes > 0
                           ? 100.0 * static_cast<double>(u.n_bytes) / static_cast<double>(s.n_bytes)
                           : 0.0;
        std::printf("  %-7s  %8lld  %14lld  %12s  %5.1f%%\n",
                    std::string(type_traits(u.type).name).c_str(),
                    static_cast<long long>(u.n_tensors), static_cast<long long>(u.n_elements),
                    format_bytes(u.n_bytes).c_str(), share);
    }
    std::printf("  %-7s  %8lld  %14lld  %12s\n", "total", static_cast<long long>(s.n_tensors),
                static_cast<long long>(s.n_params), format_bytes(s.n_bytes).c_str());
}

void print_text(const InspectReport& r, bool with_metadata) {
    const ModelFile& f = r.file;
    const ModelConfig& c = r.config;
    std::printf("model          %s\n", f.path().c_str());
    std::printf("               GGUF v%u, %d file%s, %s, %zu keys, %lld tensors\n",
                f.shard(0).version(), f.n_shards(), f.n_shards() == 1 ? "" : "s",
                format_bytes(f.total_file_bytes()).c_str(), f.shard(0).metadata().size(),
                static_cast<long long>(r.summary.n_tensors));
    if (!c.name.empty()) std::printf("name           %s\n", c.name.c_str());
    std::printf("architecture   %s (%s)\n", c.architecture.c_str(),
                std::string(arch_spec(c.architecture).description).c_str());
    if (c.file_type >= 0) {
        std::printf("file type      %s (%lld)\n", file_type_name(c.file_type).c_str(),
                    static_cast<long long>(c.file_type));
    }
    std::printf("params         %lld (%s), %.2f bits per weight\n\n",
                static_cast<long long>(r.summary.n_params), count(r.summary.n_params).c_str(),
                r.summary.bits_per_weight());
    print_hparams(c);
    std::printf("\n");
    if (c.is_moe()) {
        print_experts(r);
        std::printf("\n");
    }
    print_tokenizer(r);
    if (with_metadata) {
        std::printf("\nmetadata\n");
        for (const auto& [key, value] : f.shard(0).metadata()) {
            std::printf("  %-40s %s\n", key.c_str(), value.to_display_string().c_str());
        }
    }
    std::printf("\n");
    print_tensors(f);
    std::printf("\n");
    print_types(r.summary);
}

void run_inspect(const InspectArgs& args) {
    ModelFile file(args.model);
    InspectReport report{file, ModelConfig::from_file(file), summarize_tensors(file.tensors())};
    if (args.json) {
        std::cout << inspect_json(report, args.metadata).dump(2) << "\n";
    } else {
        print_text(report, args.metadata);
    }
    std::fflush(stdout);
}

}  // namespace

void add_inspect_command(CLI::App& app) {
    auto args = std::make_shared<InspectArgs>();
    CLI::App* cmd =
        app.add_subcommand("inspect", "Validate a model and show its metadata, tensors and sizes");
    cmd->add_option("-m,--model", args->model, "GGUF model file")->required();
    cmd->add_flag("--json", args->json, "Print JSON instead of text");
    cmd->add_flag("--metadata", args->metadata, "Also list every metadata key");
    cmd->callback([args] { run_inspect(*args); });
}

}  // namespace strata::cli
