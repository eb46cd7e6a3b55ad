// The tensors an architecture expects, with shapes computed from a ModelConfig. One list
// drives both validation of a file (model_config.cpp) and what the synthetic writer emits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/tensor_role.h"

namespace strata {

class ModelFile;
struct ModelConfig;

struct TensorSpec {
    std::string name;  // "blk.3.attn_q.weight"
    TensorRole role = TensorRole::Other;  // from the name (tensor_name_info)
    int layer = -1;             // -1 for tensors outside the blocks
    std::vector<int64_t> ne;    // ggml order: ne[0] innermost
    std::string shape_formula;  // "[n_embd, n_head*head_dim_k]", for messages
    bool required = true;
    bool in_config = true;  // optional tensors: present according to the config
                            // (e.g. output.weight iff !tied_output)
};

// "[640, 1024]"
std::string shape_string(const std::vector<int64_t>& ne);

// Collects specs; the architecture files describe their tensors through it.
class TensorListBuilder {
  public:
    explicit TensorListBuilder(std::vector<TensorSpec>& out) : out_(out) {}

    // A tensor outside the blocks ("output_norm.weight").
    // The spec's role comes from the name (engine/core/tensor_role.h).
    void global(std::string name, std::vector<int64_t> ne, std::string formula,
                bool required = true, bool in_config = true);
    // A tensor of block `il`; `suffix` is appended to "blk.<il>." ("attn_q.weight").
    void layer(int il, std::string_view suffix, std::vector<int64_t> ne,
               std::string formula, bool required = true, bool in_config = true);

  private:
    std::vector<TensorSpec>& out_;
};

// The tensors the config's architecture expects, in a natural file order (embeddings, blocks
// in order, output). Throws UnsupportedError for an unknown architecture.
std::vector<TensorSpec> expected_tensors(const ModelConfig& config);

// Checks the file's tensor table against expected_tensors(config): every required tensor
// present, every expected tensor with the expected shape, no "blk.N." with N >= n_layer.
// Throws FormatError naming the tensor, its shape and the expected shape; UnsupportedError
// naming the tensor, its type and the supported types for a type Strata cannot compute with.
void validate_tensors(const ModelFile& file, const ModelConfig& config);

}  // namespace strata
