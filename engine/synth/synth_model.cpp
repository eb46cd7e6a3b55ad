// Plans and streams a synthetic model (see synth_model.h): metadata and tensor table first,
// then each tensor generated in chunks of rows and appended. One thread generates
// at about 2.4 GB/s, above disk speed, so generation is not parallelised.
#include "engine/synth/synth_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <ostream>

#include "engine/core/error.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/synth/rng.h"
#include "engine/synth/synth_metadata.h"
#include "engine/synth/synth_preset.h"

namespace strata {
namespace {

constexpr size_t kChunkBytes = size_t{8} << 20;

WeightDist weight_dist(const TensorSpec& spec, const ModelConfig& c) {
    if (is_norm_role(spec.role)) return {1.0f, 0.02f};
    if (spec.role == TensorRole::RopeFreqs) return {1.0f, 0.0f};
    if (is_vector_role(spec.role)) return {0.0f, 0.02f};
    int64_t fan_in = (spec.role == TensorRole::TokenEmbd || spec.role == TensorRole::Output)
                         ? c.n_embd
                         : spec.ne.at(0);
    return {0.0f, static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)))};
}

// The tokenizer fields ModelConfig::from_file will read back from the vocabulary's keys.
TokenizerConfig tokenizer_config(const SynthVocab& v) {
    TokenizerConfig t;
    t.model = v.model;
    t.pre = v.pre;
    t.n_tokens = static_cast<int64_t>(v.tokens.size());
    t.n_merges = static_cast<int64_t>(v.merges.size());
    t.has_scores = !v.scores.empty();
    t.has_token_types = !v.token_types.empty();
    t.special = v.special;
    t.add_bos = v.add_bos.value_or(false);
    t.add_eos = v.add_eos.value_or(false);
    t.add_space_prefix = v.add_space_prefix.value_or(v.model == "llama");
    t.has_chat_template = !v.chat_template.empty();
    return t;
}

// A standard normal from two uniforms of `rng` (Box-Muller).
double standard_normal(Rng& rng) {
    const double u = 1.0 - rng.uniform();  // (0, 1]
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * 3.14159265358979323846 * rng.uniform());
}

// Rows [row0, row0 + n) of a router (f32, one row per expert) scaled for SynthOptions::routing_skew.
void skew_router_rows(float* rows, int64_t row0, int64_t n, int64_t ne0, double skew, uint64_t tensor_seed) {
    for (int64_t r = 0; r < n; ++r) {
        Rng rng(mix_seed(tensor_seed, static_cast<uint64_t>(row0 + r) + 0x5EEDull));
        const auto f = static_cast<float>(std::exp(skew * standard_normal(rng)));
        for (int64_t i = 0; i < ne0; ++i) rows[r * ne0 + i] *= f;
    }
}

void write_tensor(GgufWriter& w, const SynthTensor& t, uint64_t seed, double routing_skew, std::vector<uint8_t>& buf,
                  const std::function<void(uint64_t)>& on_chunk) {
    const int64_t ne0 = t.spec.ne.at(0);
    int64_t n_rows = 1;
    for (size_t i = 1; i < t.spec.ne.size(); ++i)
        n_rows *= t.spec.ne[i];
    const size_t rb = row_bytes(t.type, ne0);
    const int64_t rows_per_chunk = std::max<int64_t>(1, static_cast<int64_t>(buf.size() / rb));
    if (buf.size() < rb) buf.resize(rb);
    const uint64_t tensor_seed = mix_seed(seed, name_hash(t.spec.name));

    for (int64_t row0 = 0; row0 < n_rows; row0 += rows_per_chunk) {
        const int64_t n = std::min(rows_per_chunk, n_rows - row0);
        fill_rows(t.type, t.dist, tensor_seed, row0, n, ne0, buf.data());
        if (routing_skew > 0 && t.spec.role == TensorRole::FfnGateInp) {
            STRATA_INVARIANT(t.type == GgmlType::F32);
            skew_router_rows(reinterpret_cast<float*>(buf.data()), row0, n, ne0, routing_skew, tensor_seed);
        }
        w.write_tensor_data(buf.data(), n * rb);
        on_chunk(n * rb);
    }
}

SynthResult write_with(const SynthOptions& options, GgufWriter& w) {
    auto start = std::chrono::steady_clock::now();
    SynthPlan plan = plan_synth_model(options);
    for (auto& [key, value] : synth_metadata(plan, options))
        w.set(key, std::move(value));
    for (const SynthTensor& t : plan.tensors)
        w.add_tensor(t.spec.name, t.type, t.spec.ne);
    w.write_header();

    std::vector<uint8_t> buf(kChunkBytes);
    SynthProgress progress;
    progress.bytes_total = plan.tensor_bytes;
    progress.n_tensors = static_cast<int64_t>(plan.tensors.size());
    for (const SynthTensor& t : plan.tensors) {
        progress.tensor_name = t.spec.name;
        write_tensor(w, t, options.seed, options.routing_skew, buf, [&](uint64_t bytes) {
            progress.bytes_done += bytes;
            if (options.on_progress) options.on_progress(progress);
        });
        ++progress.tensor_index;
    }
    w.finish();
    if (options.on_progress) options.on_progress(progress);

    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return {w.total_bytes(), progress.n_tensors, elapsed.count()};
}

}  // namespace

SynthPlan plan_synth_model(const SynthOptions& options) {
    const SynthPreset& preset = find_synth_preset(options.preset);
    SynthPlan plan;
    plan.preset = preset.name;
    plan.config = synth_config(preset, options.n_layer, options.n_vocab);
    plan.vocab = make_synth_vocab(preset.vocab, plan.config.n_vocab);
    plan.config.tokenizer = tokenizer_config(plan.vocab);
    plan.config.file_type = static_cast<int64_t>(synth_file_type(options.type));
    if (!(options.routing_skew >= 0.0 && options.routing_skew <= 4.0)) {
        throw ArgumentError(cat("routing skew ", options.routing_skew, " is outside [0, 4]"));
    }
    if (options.routing_skew > 0 && !plan.config.is_moe()) {
        throw ArgumentError(cat("routing skew needs a mixture-of-experts preset; ", preset.name, " has no experts"));
    }

    for (TensorSpec& spec : expected_tensors(plan.config)) {
        if (!spec.in_config) continue;
        SynthTensor t;
        t.type = synth_tensor_type(spec, plan.config, options.type);
        t.dist = weight_dist(spec, plan.config);
        int64_t n_rows = 1;
        for (size_t i = 1; i < spec.ne.size(); ++i)
            n_rows *= spec.ne[i];
        t.n_bytes = row_bytes(t.type, spec.ne.at(0)) * static_cast<uint64_t>(n_rows);
        STRATA_INVARIANT(can_fill(t.type));
        t.spec = std::move(spec);
        plan.tensor_bytes += t.n_bytes;
        plan.tensors.push_back(std::move(t));
    }
    return plan;
}

SynthResult write_synth_model(const SynthOptions& options, std::ostream& out) {
    GgufWriter writer(out);
    return write_with(options, writer);
}

SynthResult write_synth_model(const SynthOptions& options, const std::string& path) {
    plan_synth_model(options);  // bad options fail before the file is created
    GgufWriter writer(path);      // the target is replaced only once the file is complete
    return write_with(options, writer);
}

}  // namespace strata
