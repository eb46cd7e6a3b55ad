// Where a layer weight lives in the file. Most architectures store each weight as its own tensor;
// phi3 fuses q/k/v into blk.N.attn_qkv.weight (rows: Q, then K, then V) and gate/up into
// blk.N.ffn_up.weight (rows: gate, then up). The runtime binds such weights as row views of the
// fused tensor (quantized rows are whole blocks, so a view is free) and places the fused tensor as
// one unit: a placement names file tensors only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata {

struct ModelConfig;

struct RowRange {
    int64_t first = 0;
    int64_t count = 0;
};

struct WeightSource {
    std::string tensor;             // the file tensor: "blk.3.attn_qkv.weight"
    std::optional<RowRange> rows;   // nullopt: the whole tensor
};

// The source of layer il's weight `suffix` ("attn_q.weight", "ffn_gate.weight", ...): the fused
// tensor and its rows for a fused weight of config's architecture, else "blk.<il>.<suffix>" whole.
WeightSource weight_source(const ModelConfig& config, int il, std::string_view suffix);
// The file tensor holding the weight named `name` ("blk.3.attn_k.weight" -> "blk.3.attn_qkv.weight"
// for phi3); `name` itself when it is no fused weight.
std::string file_tensor_name(const ModelConfig& config, std::string_view name);

}  // namespace strata
