// From a parsed request to what the engine runs: the prompt tokens (the chat rendered with the
// model's chat format, or the completion prompt), the token budget, and the checks that need
// the model — prompt and max_tokens against the context (400 naming both numbers), token ids
// and logit_bias ids inside the vocabulary.
#pragma once

#include <cstdint>

#include "engine/chat/chat_renderer.h"
#include "engine/server/job.h"
#include "engine/server/request.h"

namespace strata {
class Tokenizer;
}

namespace strata::server {

struct PromptContext {
    const Tokenizer* tokenizer = nullptr;
    ChatRenderer chat;  // the model's chat template or a built-in format
    int32_t n_vocab = 0;         // rows of the output matrix: ids the sampler can produce
    int64_t n_ctx = 0;           // context of one slot
    int64_t max_tokens_cap = 0;  // the server's most tokens per request; <= 0: the context only
};

// Throws ApiError 400 (code context_length_exceeded when the context is the problem).
JobSpec make_job_spec(const CompletionRequest& request, const PromptContext& context);

}  // namespace strata::server
