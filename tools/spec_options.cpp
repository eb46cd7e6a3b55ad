// Speculative decoding's flags and runtimes (spec_options.h).
#include "tools/spec_options.h"

#include <algorithm>
#include <cstdio>

#include "engine/core/error.h"
#include "engine/core/safe_write.h"
#include "engine/runtime/draft_runtime.h"
#include "tools/numbers.h"

namespace strata::cli {
namespace {

constexpr int64_t kAutoMax = 16;  // beyond it a CPU pass is far from memory-bound (issue 25)

}  // namespace

void add_spec_options(CLI::App& cmd, SpecFlags& f) {
    cmd.add_option("--spec", f.mode,
                   "speculative decoding: lookup (prompt n-grams), draft (a draft model, -md), self (the target "
                   "drafts with only its FFN work on the GPU: hot neurons with --sparsity S --hot-neurons, else the "
                   "GPU layers' FFNs; one more KV cache; so far measured slower than plain decoding, see "
                   "docs/SPECULATION.md) or off (default: draft with -md, else off)")
        ->check(CLI::IsMember({"lookup", "draft", "self", "off"}));
    cmd.add_option("--draft-max,--draft,--draft-n", f.draft_max,
                   cat("most draft tokens verified per pass (--spec), 1..", SpecParams::kMaxDraft,
                       ", or auto: chosen per pass (up to ", kAutoMax, ") from the acceptance and pass times measured"))
        ->capture_default_str();
    cmd.add_option("--draft-min,--draft-n-min", f.params.draft_min, "shorter drafts are not verified (--spec)")
        ->capture_default_str()->check(int_in(0, SpecParams::kMaxDraft));
    cmd.add_option("--model-draft", f.draft_model,
                   "-md FILE: a draft model with the target's vocabulary (--spec draft); placed on the GPU first, "
                   "inside the same --gpu-mem / --ram-mem");
    cmd.add_option("--gpu-layers-draft,--n-gpu-layers-draft", f.gpu_layers_draft,
                   "-ngld N: at most the draft's first N layers on the GPU (-1 = no limit)")
        ->capture_default_str()->check(int_in(-1, INT32_MAX));
}

SpecParams resolve_spec(const SpecFlags& f, const EngineOptions& engine, std::string_view command) {
    SpecParams p = f.params;
    if (f.draft_max == "auto") {
        p.auto_length = true;
        p.draft_max = std::min<int64_t>(kAutoMax, engine.n_batch - 1);
    } else {
        try {
            p.draft_max = parse_int(f.draft_max, "--draft-max", 1, SpecParams::kMaxDraft);
        } catch (const ArgumentError& e) {
            throw ArgumentError(cat(e.what(), ", or auto"));
        }
    }
    p.mode = f.mode.empty() ? (f.draft_model.empty() ? SpecMode::Off : SpecMode::Draft) : parse_spec_mode(f.mode);
    if (p.mode == SpecMode::Draft && f.draft_model.empty()) {
        throw ArgumentError("--spec draft needs a draft model: -md FILE (a model with the target's vocabulary)");
    }
    if (p.mode != SpecMode::Draft && !f.draft_model.empty()) {
        throw ArgumentError(cat("-md '", f.draft_model, "' drafts for --spec draft, not --spec ", spec_mode_name(p.mode)));
    }
    if (p.mode == SpecMode::Off) return p;
    p.validate(engine.n_batch);
    if (engine.sampler.temperature > 0.0f && engine.sampler.grammar) {
        std::fprintf(stderr,
                     "strata %s: --spec %s with a grammar needs greedy sampling (--temp 0); temperature %g: "
                     "decoding without speculation\n",
                     std::string(command).c_str(), std::string(spec_mode_name(p.mode)).c_str(),
                     static_cast<double>(engine.sampler.temperature));
        p.mode = SpecMode::Off;
    }
    return p;
}

Engines load_engines(const std::string& model, const RuntimeOptions& options, const SpecFlags& flags,
                     const SpecParams& spec) {
    Engines e;
    if (spec.mode == SpecMode::Self) {  // the budgets hold the self-draft's KV cache and scratch too
        RuntimeOptions o = options;
        o.session.n_sequences += 1;
        e.target = std::make_unique<Runtime>(model, o);
        e.draft_session = e.target->new_self_draft_session();
        return e;
    }
    if (spec.mode != SpecMode::Draft) {
        e.target = std::make_unique<Runtime>(model, options);
        return e;
    }
    note_input_file(flags.draft_model);
    LoadedPair pair = load_target_and_draft(model, options, DraftLoad{flags.draft_model, flags.gpu_layers_draft});
    e.draft = std::move(pair.draft);
    e.target = std::move(pair.target);
    e.draft_session = e.draft->new_session();
    return e;
}

void apply_cost_prior(SpecParams& spec, const Runtime& runtime) {
    if (!spec.auto_length || !runtime.cost_estimate()) return;
    spec.prior.pass1_s = runtime.cost_estimate()->decode_s_per_token;
    spec.prior.per_token_s = runtime.cost_estimate()->prefill_s_per_token;
}

std::string spec_summary(SpecMode mode, const SpecStats& s) {
    return cat("speculation (", spec_mode_name(mode), "): ", s.passes, " passes, ", s.proposed, " proposed, ", s.accepted,
               " accepted | ", fixed(s.mean_accepted(), 2), " accepted tokens per pass, mean draft ",
               fixed(s.passes > 0 ? static_cast<double>(s.proposed) / static_cast<double>(s.passes) : 0.0, 2));
}

}  // namespace strata::cli
