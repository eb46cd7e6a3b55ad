// Prompt tokens and the context budget of a request (job_spec.h).
#include "engine/server/job_spec.h"

#include <algorithm>

#include "engine/chat/conversation.h"
#include "engine/server/api_error.h"
#include "engine/server/tool_prompt.h"
#include "engine/tokenizer/tokenizer.h"

namespace strata::server {
namespace {

std::vector<TokenId> prompt_tokens(const CompletionRequest& r, const PromptContext& c) {
    if (r.endpoint == Endpoint::Chat && r.tool_view) return tool_chat_tokens(*c.tokenizer, c.chat, r);
    if (r.endpoint == Endpoint::Chat) {
        return render_chat_tokens(*c.tokenizer, c.chat, r.messages, /*add_generation_prompt=*/true);
    }
    if (!r.prompt_tokens.empty()) {
        const int32_t n_tokens = c.tokenizer->n_tokens();
        for (size_t i = 0; i < r.prompt_tokens.size(); ++i) {
            if (r.prompt_tokens[i] >= n_tokens) {
                throw ApiError(400, cat("'prompt[", i, "]' = ", r.prompt_tokens[i], " is outside the vocabulary [0, ",
                                        n_tokens, ")"), cat("prompt[", i, "]"));
            }
        }
        return r.prompt_tokens;
    }
    return c.tokenizer->encode(r.prompt, /*add_special=*/true, /*parse_special=*/false);
}

}  // namespace

JobSpec make_job_spec(const CompletionRequest& r, const PromptContext& c) {
    JobSpec spec;
    spec.prompt = prompt_tokens(r, c);
    if (spec.prompt.empty()) throw ApiError(400, "the prompt gives no tokens", r.endpoint == Endpoint::Chat ? "messages" : "prompt");
    const int64_t n_prompt = static_cast<int64_t>(spec.prompt.size());
    const char* prompt_field = r.endpoint == Endpoint::Chat ? "messages" : "prompt";
    if (n_prompt >= c.n_ctx) {
        throw ApiError(400, cat("the prompt has ", n_prompt, " tokens but the context holds ", c.n_ctx,
                                " (one more is needed to generate); shorten it or start the server with a larger -c"),
                       prompt_field, "context_length_exceeded");
    }
    int64_t max_tokens = c.n_ctx - n_prompt;
    if (c.max_tokens_cap > 0) max_tokens = std::min(max_tokens, c.max_tokens_cap);
    if (r.max_tokens) {
        const int64_t asked = c.max_tokens_cap > 0 ? std::min(*r.max_tokens, c.max_tokens_cap) : *r.max_tokens;
        if (n_prompt + asked > c.n_ctx) {
            throw ApiError(400, cat("the prompt has ", n_prompt, " tokens and max_tokens asks for ", asked,
                                    ": together ", n_prompt + asked, ", but the context holds ", c.n_ctx),
                           "max_tokens", "context_length_exceeded");
        }
        max_tokens = asked;
    }
    spec.max_tokens = max_tokens;
    for (const auto& [id, bias] : r.sampler.logit_bias) {
        if (id >= c.n_vocab) {
            throw ApiError(400, cat("'logit_bias' token id ", id, " is outside the vocabulary [0, ", c.n_vocab, ")"),
                           cat("logit_bias.", id));
        }
    }
    spec.sampler = r.sampler;
    if (r.tools.choice.forced()) spec.sampler.grammar = forced_call_grammar(r.tools);
    spec.stop = r.stop;
    spec.ignore_eos = r.ignore_eos;
    spec.cache_prompt = r.cache_prompt;
    spec.logprobs = r.logprobs;
    return spec;
}

}  // namespace strata::server
