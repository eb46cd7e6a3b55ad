// Internal to engine/model: the steps of ModelConfig::from_file that are not the generic
// key reading itself: range checks, cross-field checks, tokenizer keys.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/model/model_config.h"

namespace strata {

class KeyReader;
struct ArchSpec;

// Limits beyond which a value is a corrupt or hostile file rather than a model.
inline constexpr int64_t kMaxLayers = 4096;
inline constexpr int64_t kMaxEmbd = int64_t{1} << 20;
inline constexpr int64_t kMaxVocab = int64_t{1} << 24;
inline constexpr int64_t kMaxFf = int64_t{1} << 22;
inline constexpr int64_t kMaxHeads = int64_t{1} << 14;
inline constexpr int64_t kMaxHeadDim = int64_t{1} << 14;
inline constexpr int64_t kMaxContext = int64_t{1} << 27;

// Throws FormatError unless lo <= value <= hi; `what` names the key or quantity.
void check_range(const KeyReader& keys, std::string_view what, int64_t value, int64_t lo,
                 int64_t hi);

// Cross-field checks once every key is read: heads divide, widths agree with the arch's
// constraints, eps and RoPE values sane.
void check_hparams(const KeyReader& keys, const ArchSpec& spec, const ModelConfig& c);

// Reads tokenizer.* keys into c.tokenizer, sets c.n_vocab (from the token list, else
// <arch>.vocab_size, else `embd_rows`), checks array lengths and special token ids.
void read_tokenizer(const KeyReader& keys, int64_t embd_rows, ModelConfig& c);

}  // namespace strata
