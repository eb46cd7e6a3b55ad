// One-shot generation: prefill a prompt, then sample and decode token by token, streaming
// text (always complete UTF-8) to a callback, until n_predict tokens, an end-of-generation
// token, or the callback asks to stop. Timings for prompt and decode are reported. With
// speculation (speculate.h) the tokens come from verified drafts, the same ones.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "engine/runtime/speculate.h"
#include "engine/sampler/sampler_params.h"
#include "engine/tokenizer/vocab.h"

namespace strata {

class Session;

struct GenerateParams {
    int64_t n_predict = -1;  // tokens to generate; -1 = until end of generation or context end
    SamplerParams sampler;
    bool stop_at_eog = true;
    // Speculative decoding (speculate.h); a sampled run with a grammar is refused (ArgumentError).
    SpecParams spec;
    // SpecMode::Draft: the draft model's session (draft_model.h), with the target's vocabulary;
    // SpecMode::Self: the target's self-draft session (Runtime::new_self_draft_session).
    // Must outlive the call; it is left holding the text so far (a chat's next turn reuses it).
    Session* draft = nullptr;
    // Called after each forward pass of a prompt longer than one batch: (prompt tokens done,
    // prompt tokens). The passes are the ones Session::prefill makes, so results do not change.
    std::function<void(int64_t done, int64_t total)> on_prompt_progress;
};

enum class StopReason { Length, EndOfGeneration, ContextFull, Callback };
std::string_view stop_reason_name(StopReason reason);

struct GenerateStats {
    int64_t n_prompt = 0;
    int64_t n_generated = 0;
    double prompt_seconds = 0;
    double decode_seconds = 0;
    StopReason stop = StopReason::Length;
    uint32_t seed = 0;
    SpecStats spec;  // zero without speculation

    double prompt_tokens_per_second() const;
    double decode_tokens_per_second() const;
};

// Called with each piece of text as it becomes complete; return false to stop.
using TextCallback = std::function<bool(std::string_view text)>;

// Feeds `prompt` into the session (after whatever it already holds) and generates.
GenerateStats generate(Session& session, std::span<const TokenId> prompt,
                       const GenerateParams& params, const TextCallback& on_text);

}  // namespace strata
