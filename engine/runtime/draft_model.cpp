// Vocabulary check and proposals of a draft model (draft_model.h).
#include "engine/runtime/draft_model.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "engine/runtime/spec_sampling.h"

namespace strata {
namespace {

int64_t logits_width(const Model& m) { return m.weights().output.ne[1]; }

SamplerParams draft_sampler_params(const SamplerParams& target) {
    SamplerParams p = target;
    p.grammar.reset();  // drafts outside the grammar are simply rejected by the target
    p.seed = target.seed ^ 0x5bd1e995u;
    return p;
}

}  // namespace

void check_draft_vocabulary(const Model& target, const std::string& target_path, const Model& draft,
                            const std::string& draft_path) {
    const Vocab& t = target.tokenizer().vocab();
    const Vocab& d = draft.tokenizer().vocab();
    const auto refuse = [&](const std::string& what) {
        throw ArgumentError(cat("the draft model '", draft_path, "' cannot draft for '", target_path, "': ", what,
                                " (-md needs a draft with the target's vocabulary)"));
    };
    if (t.n_tokens() != d.n_tokens() || logits_width(target) != logits_width(draft)) {
        refuse(cat("its vocabulary has ", d.n_tokens(), " tokens and ", logits_width(draft),
                   " logits, the target's ", t.n_tokens(), " tokens and ", logits_width(target), " logits"));
    }
    if (t.model != d.model) refuse("the tokenizer models differ (SPM and BPE)");
    for (int32_t id = 0; id < t.n_tokens(); ++id) {
        if (t.tokens[static_cast<size_t>(id)] != d.tokens[static_cast<size_t>(id)]) {
            refuse(cat("token ", id, " is '", d.tokens[static_cast<size_t>(id)], "' in the draft and '",
                       t.tokens[static_cast<size_t>(id)], "' in the target (of ", t.n_tokens(), " tokens)"));
        }
    }
}

DraftProposer::DraftProposer(Session& session, const SamplerParams& sampler)
    : session_(session),
      sampler_(draft_sampler_params(sampler), static_cast<int32_t>(logits_width(session.model()))),
      rng_(sampler_.seed()),
      sampled_(sampler.temperature > 0.0f) {}

std::span<const float> DraftProposer::follow(std::span<const TokenId> history) {
    const std::vector<TokenId>& held = session_.tokens();
    const size_t n = std::min(held.size(), history.size());
    size_t common = static_cast<size_t>(std::mismatch(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(n),
                                                      history.begin()).first - held.begin());
    if (common == history.size()) --common;  // the last token is fed again for its logits
    session_.truncate(static_cast<int64_t>(common));
    if (sampler_.params().penalties_active()) {
        sampler_.reset();
        for (TokenId t : history) sampler_.accept(t);
    }
    return session_.feed(history.subspan(common));
}

void DraftProposer::propose(std::span<const TokenId> history, int64_t k, DraftChain& out) {
    out.tokens.clear();
    out.q.clear();
    const int64_t room = session_.n_ctx() - static_cast<int64_t>(history.size());
    k = std::min(k, room);
    if (k < 1 || history.empty()) return;
    std::span<const float> logits = follow(history);
    std::vector<float> q(static_cast<size_t>(sampler_.n_vocab()));
    for (int64_t i = 0; i < k; ++i) {
        TokenId d;
        if (sampled_) {
            dense_probabilities(sampler_.candidates(logits), q);
            d = static_cast<TokenId>(draw_index(q, rng_.uniform01()));
            out.q.push_back(q);
        } else {
            d = sampler_.sample(logits);
        }
        out.tokens.push_back(d);
        if (sampler_.params().penalties_active()) sampler_.accept(d);
        if (i + 1 < k) logits = session_.feed({&d, 1});
    }
}

}  // namespace strata
