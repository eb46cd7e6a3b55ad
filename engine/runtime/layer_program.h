// LayerProgram: the forward pass shared by every supported architecture (llama, qwen2, qwen3,
// gemma3), written once against the Backend interface:
//   x = embed(tokens)·embd_scale
//   per layer: x += [post_norm](Wo · attention(rope(norm_qk(Wq·n(x) + bq)), rope(..Wk..), Wv..))
//              x += [post_norm](Wdown · (act(Wgate·n(x)) ⊙ Wup·n(x)))
//   hidden = output_norm(x);  logits = softcap(Woutput · hidden)
// Every op goes through the backend; the program owns only activation scratch.
// Not thread-safe: one program per sequence being evaluated.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/backend.h"

namespace strata {

struct ModelConfig;
struct ModelWeights;
class KvCache;

class LayerProgram {
public:
    // The config, weights and backend must outlive the program.
    LayerProgram(const ModelConfig& config, const ModelWeights& weights, Backend& backend);

    // Evaluates `tokens` at positions kv.n_used() .. kv.n_used()+n-1, appending their keys and
    // values to `kv`. For each index in `output_rows` (positions within the batch, ascending or
    // not), writes the final normalised hidden state to `hidden` [n_embd, output_rows.size()].
    // Throws ArgumentError for token ids outside the vocabulary or a batch that overflows the
    // cache.
    void forward(std::span<const int32_t> tokens, KvCache& kv,
                 std::span<const int32_t> output_rows, std::vector<float>& hidden);

    // logits [n_vocab, n] = output · hidden [n_embd, n], soft-capped when the model says so.
    void logits(const float* hidden, int64_t n, float* logits);

    int64_t n_embd() const;
    int64_t n_vocab() const;

private:
    void attention_block(int il, int64_t n, KvCache& kv, int64_t pos0);
    void ffn_block(int il, int64_t n);
    Tensor act(std::vector<float>& buf, int64_t ne0, int64_t n);  // f32 view, grown as needed

    const ModelConfig& config_;
    const ModelWeights& weights_;
    Backend& backend_;
    std::vector<int32_t> positions_;
    // Activation scratch, [width, n_tokens] each.
    std::vector<float> x_, cur_, q_, k_, v_, attn_, proj_, gate_, up_;
};

}  // namespace strata
