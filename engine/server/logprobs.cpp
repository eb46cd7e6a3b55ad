// Token log-probabilities and their OpenAI shapes (logprobs.h).
#include "engine/server/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"

namespace strata::server {

using nlohmann::json;

TokenLogprob token_logprob(std::span<const float> logits, TokenId chosen, int n_top, const Tokenizer& tokenizer) {
    if (chosen < 0 || static_cast<size_t>(chosen) >= logits.size()) {
        throw ArgumentError(cat("token ", chosen, " is outside the ", logits.size(), " logits"));
    }
    n_top = std::clamp(n_top, 0, std::min<int>(kMaxTopLogprobs, static_cast<int>(logits.size())));
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l - max));  // -inf logits add 0
    const double log_z = static_cast<double>(max) + std::log(sum);
    auto logprob = [&](TokenId id) { return static_cast<float>(logits[static_cast<size_t>(id)] - log_z); };
    TokenLogprob out;
    out.id = chosen;
    out.piece = tokenizer.token_to_piece(chosen);
    out.logprob = logprob(chosen);
    if (n_top > 0) {
        std::vector<TokenId> ids(logits.size());
        std::iota(ids.begin(), ids.end(), 0);
        std::partial_sort(ids.begin(), ids.begin() + n_top, ids.end(), [&](TokenId a, TokenId b) {
            const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
            return la > lb || (la == lb && a < b);
        });
        for (int i = 0; i < n_top; ++i) out.top.emplace_back(tokenizer.token_to_piece(ids[static_cast<size_t>(i)]), logprob(ids[static_cast<size_t>(i)]));
    }
    return out;
}

namespace {

json bytes_json(const std::string& piece) {
    json b = json::array();
    for (unsigned char c : piece) b.push_back(static_cast<int>(c));
    return b;
}

}  // namespace

json chat_logprobs_json(std::span<const TokenLogprob> tokens) {
    json content = json::array();
    for (const TokenLogprob& t : tokens) {
        json top = json::array();
        for (const auto& [piece, lp] : t.top) top.push_back({{"token", piece}, {"logprob", lp}, {"bytes", bytes_json(piece)}});
        content.push_back({{"token", t.piece}, {"logprob", t.logprob}, {"bytes", bytes_json(t.piece)},
                           {"top_logprobs", std::move(top)}});
    }
    return json{{"content", std::move(content)}, {"refusal", nullptr}};
}

json completion_logprobs_json(std::span<const TokenLogprob> tokens, int64_t text_offset) {
    json pieces = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
    for (const TokenLogprob& t : tokens) {
        pieces.push_back(t.piece);
        lps.push_back(t.logprob);
        json top = json::object();
        for (const auto& [piece, lp] : t.top) {
            if (!top.contains(piece)) top[piece] = lp;  // two tokens of one text: the likelier
        }
        tops.push_back(std::move(top));
        offsets.push_back(text_offset);
        text_offset += static_cast<int64_t>(t.piece.size());
    }
    return json{{"tokens", std::move(pieces)}, {"token_logprobs", std::move(lps)}, {"top_logprobs", std::move(tops)},
                {"text_offset", std::move(offsets)}};
}

}  // namespace strata::server
