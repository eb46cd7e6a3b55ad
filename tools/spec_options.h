// Speculative decoding's flags (issue 25), shared by run, chat and bench: --spec off|lookup|draft|self,
// --draft-max, --draft-min, -md/--model-draft and -ngld/--gpu-layers-draft (llama.cpp's names),
// and the runtimes they need: the target alone, or a draft and the target through one budget
// (engine/runtime/draft_runtime.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "engine/runtime/runtime.h"
#include "engine/runtime/session.h"
#include "engine/runtime/speculate.h"
#include "tools/sampling_options.h"

namespace strata::cli {

struct SpecFlags {
    std::string mode;          // --spec; empty: draft with -md, else off
    SpecParams params;         // --draft-min (and the defaults)
    std::string draft_max = "8";  // --draft-max: 1..64 or auto
    std::string draft_model;   // -md FILE
    int gpu_layers_draft = -1; // -ngld N
};

void add_spec_options(CLI::App& cmd, SpecFlags& flags);

// The speculation a command runs: the mode (-md alone means draft), limits checked against the
// batch (-b). ArgumentError for --spec draft without -md and -md with another mode. A sampler
// speculation cannot keep exact (a grammar at temperature > 0) turns it off, said on stderr
// with the command's name.
SpecParams resolve_spec(const SpecFlags& flags, const EngineOptions& engine, std::string_view command);

// The target's runtime, and with SpecMode::Draft the draft's and a session of it; with
// SpecMode::Self the target's self-draft session (its budgets hold one more session).
struct Engines {
    std::unique_ptr<Runtime> draft;
    std::unique_ptr<Runtime> target;
    std::unique_ptr<Session> draft_session;  // null without a draft (Draft: the draft's; Self: the target's)
};
Engines load_engines(const std::string& model, const RuntimeOptions& options, const SpecFlags& flags,
                     const SpecParams& spec);

// With --draft-max auto: the chooser starts from the runtime's cost estimate (decode step and
// prefill per token) when it has one.
void apply_cost_prior(SpecParams& spec, const Runtime& runtime);

// "speculation (lookup): P passes, D proposed, A accepted | M accepted tokens per pass".
std::string spec_summary(SpecMode mode, const SpecStats& stats);

}  // namespace strata::cli
