// The tensors an architecture expects, with shapes computed from a ModelConfig. One list
// drives both validation of a file (model_config.cpp) and what the synthetic writer emits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

class ModelFile;
struct ModelConfig;

// What a tensor is for. The q4_k_m type rules and the synthetic weight magnitudes key on it.
enum class TensorRole {
    TokenEmbd,
    Output,
    OutputNorm,
    RopeFreqs,
    AttnNorm,
    AttnQ,
    AttnK,
    AttnV,
    AttnOutput,
    AttnQkv,  // fused q/k/v rows [n_embd, n_q + n_k + n_v] (phi3; see fused_tensors.h)
    AttnQNorm,
    AttnKNorm,
    AttnQBias,
    AttnKBias,
    AttnVBias,
    PostAttnNorm,
    FfnNorm,
    FfnGate,
    FfnUp,  // [n_embd, n_ff]; with fused gate/up (phi3) [n_embd, 2*n_ff], gate rows first
    FfnDown,
    PostFfnNorm,
    FfnGateInp,       // MoE router [n_embd, n_expert]
    FfnGateExps,      // [n_embd, n_ff_exp, n_expert]: expert e is the contiguous slice ne[2] = e
    FfnUpExps,
    FfnDownExps,      // [n_ff_exp, n_embd, n_expert]
    FfnGateInpShexp,  // [n_embd]: the shared expert's sigmoid gate (qwen2moe)
    FfnGateShexp,
    FfnUpShexp,
    FfnDownShexp,
};

std::string_view tensor_role_name(TensorRole role);
// Norm weights (kept F32, values around 1).
bool is_norm_role(TensorRole role);
// The MoE expert tensors (3-D, one matrix per expert).
bool is_expert_role(TensorRole role);
// Biases and per-dimension factors (1-D, kept F32).
bool is_vector_role(TensorRole role);

struct TensorSpec {
    std::string name;  // "blk.3.attn_q.weight"
    TensorRole role;
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
    void global(std::string name, TensorRole role, std::vector<int64_t> ne, std::string formula,
                bool required = true, bool in_config = true);
    // A tensor of block `il`; `suffix` is appended to "blk.<il>." ("attn_q.weight").
    void layer(int il, std::string_view suffix, TensorRole role, std::vector<int64_t> ne,
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
