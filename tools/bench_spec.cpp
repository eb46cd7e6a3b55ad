// Generation runs for strata bench's speculation rows (bench_spec.h).
#include "tools/bench_spec.h"

#include <random>

namespace strata::cli {

GenRun generate_once(Session& session, const std::vector<TokenId>& prompt, int64_t n, const SpecParams& spec,
                     Session* draft) {
    session.clear();
    GenerateParams gp;
    gp.n_predict = n;
    gp.stop_at_eog = false;
    gp.sampler.temperature = 0.0f;
    gp.spec = spec;
    gp.draft = draft;
    const GenerateStats st = generate(session, prompt, gp, [](std::string_view) { return true; });
    return GenRun{st.decode_tokens_per_second(), st.spec};
}

std::vector<TokenId> repeated_prompt(int64_t n_vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<TokenId> token(0, static_cast<TokenId>(n_vocab - 1));
    std::vector<TokenId> phrase(64);
    for (TokenId& t : phrase) t = token(rng);
    std::vector<TokenId> out = phrase;
    out.insert(out.end(), phrase.begin(), phrase.end());
    return out;
}

}  // namespace strata::cli
