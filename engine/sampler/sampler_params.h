// Sampling parameters with llama.cpp's defaults and meanings (docs/FORMATS.md §5.4), and their
// validation. A SamplerParams is plain data; Sampler checks it once, at construction.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "engine/sampler/grammar.h"

namespace strata {

struct SamplerParams {
    static constexpr uint32_t kRandomSeed = 0xFFFFFFFFu;  // draw a seed from the OS

    float temperature = 0.8f;       // logits /= temperature; <= 0 means greedy (argmax)
    int32_t top_k = 40;             // keep the k most likely tokens; 0 = off; clamped to n_vocab
    float top_p = 0.95f;            // keep the smallest set with cumulative p >= top_p; 1 = off
    float min_p = 0.05f;            // keep tokens with p >= min_p * p_max; 0 = off
    float repeat_penalty = 1.0f;    // over the window: logit > 0 -> /pen, <= 0 -> *pen; 1 = off
    int32_t repeat_last_n = 64;     // window of accepted tokens; 0 = off, -1 = all since reset()
    float presence_penalty = 0.0f;  // subtracted once from every token present in the window
    float frequency_penalty = 0.0f; // subtracted count times from every token in the window
    uint32_t seed = kRandomSeed;

    // Added to a token's logit before anything else (llama.cpp applies logit-bias first).
    // -inf bans a token; +inf and NaN are rejected. Ordered, so iteration is deterministic.
    std::map<int32_t, float> logit_bias;

    // Constrains the tokens to this grammar (--grammar, --json-schema); null = none. The
    // generation loop gives the Sampler the vocabulary's texts (Sampler::constrain).
    std::shared_ptr<const Grammar> grammar;

    // Throws ArgumentError naming the first bad field, its value and the allowed range.
    // Token ids in logit_bias are checked against the vocabulary by Sampler, which knows it.
    void validate() const;

    // Whether any of the repeat / presence / frequency penalties would change a logit.
    bool penalties_active() const {
        return repeat_last_n != 0 &&
               (repeat_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f);
    }
};

}  // namespace strata
