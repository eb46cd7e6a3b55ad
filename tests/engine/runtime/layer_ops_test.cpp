// The forward pass issues exactly the ops its block descriptions list (engine/core/layer_ops.h),
// the lists the cost model counts its small ops from: a decode step and a prompt batch of each
// tiny dense architecture (biases: qwen2; q/k norms: qwen3; q/k and post norms: gemma3) on a
// CPU backend that counts its calls, against the descriptions with each layer's optional
// tensors, plus the final norm of the output row.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/core/layer_ops.h"
#include "engine/model/model_config.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

using Counts = std::map<LayerOpKind, int>;

class CountingCpu : public cpu::CpuBackend {
  public:
    using cpu::CpuBackend::CpuBackend;
    Counts counts;

    void matmul(const Tensor& w, const Tensor& x, Tensor& y) override {
        ++counts[LayerOpKind::Product];
        CpuBackend::matmul(w, x, y);
    }
    void rms_norm(const Tensor& x, const Tensor* weight, float eps, Tensor& y) override {
        ++counts[LayerOpKind::Norm];
        CpuBackend::rms_norm(x, weight, eps, y);
    }
    void add(const Tensor& a, const Tensor& b, Tensor& y) override {
        ++counts[LayerOpKind::Add];
        CpuBackend::add(a, b, y);
    }
    void gated_activation(const Tensor& gate, const Tensor& up, Activation act, Tensor& y) override {
        ++counts[LayerOpKind::GatedActivation];
        CpuBackend::gated_activation(gate, up, act, y);
    }
    void rope(Tensor& x, const int32_t* positions, const RopeParams& params) override {
        ++counts[LayerOpKind::Rope];
        CpuBackend::rope(x, positions, params);
    }
    void kv_store(const Tensor& src, Tensor& cache, int64_t first_cell) override {
        ++counts[LayerOpKind::KvStore];
        CpuBackend::kv_store(src, cache, first_cell);
    }
    void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                   const int32_t* positions, const AttentionParams& params, Tensor& out) override {
        ++counts[LayerOpKind::Attention];
        CpuBackend::attention(q, k_cache, v_cache, n_cells, positions, params, out);
    }
};

bool has(const PlacedLayer& l, TensorRole w) {
    switch (w) {
        case TensorRole::AttnQBias: return l.attn_q_bias.present();
        case TensorRole::AttnKBias: return l.attn_k_bias.present();
        case TensorRole::AttnVBias: return l.attn_v_bias.present();
        case TensorRole::AttnQNorm: return l.attn_q_norm.present();
        case TensorRole::AttnKNorm: return l.attn_k_norm.present();
        case TensorRole::PostAttnNorm: return l.post_attention_norm.present();
        case TensorRole::PostFfnNorm: return l.post_ffw_norm.present();
        default: ADD_FAILURE() << "not an optional weight: " << tensor_role_name(w); return false;
    }
}

// What the descriptions say one pass issues (one sequence, one output row).
Counts described(const PlacedModel& placed, int* n_optional) {
    Counts c;
    for (int il = 0; il < placed.n_layer(); ++il) {
        for (auto ops : {attention_block_ops(), ffn_block_ops()}) {
            for (const LayerOp& op : ops) {
                if (op.optional != kNoWeight && !has(placed.layer(il), op.optional)) continue;
                *n_optional += op.optional != kNoWeight;
                ++c[op.kind];
            }
        }
    }
    ++c[LayerOpKind::Norm];  // the final norm of the output row
    return c;
}

std::string show(const Counts& c) {
    std::string s;
    for (const auto& [kind, n] : c) s += std::to_string(static_cast<int>(kind)) + ":" + std::to_string(n) + " ";
    return s;
}

class LayerOps : public ::testing::TestWithParam<const char*> {};

TEST_P(LayerOps, APassIssuesTheDescribedOps) {
    testing::ScratchFile file(std::string("layer_ops_") + GetParam() + ".gguf");
    SynthOptions options;
    options.preset = GetParam();
    options.type = SynthType::Q8_0;
    write_synth_model(options, file.path());
    const Model model(file.path());
    CountingCpu cpu(1);
    const PlacedModel placed(model, cpu);
    LayerProgram program(placed);
    KvCache kv(model.config(), 64, GgmlType::F16, placed.kv_backends(), 16);
    int n_optional = 0;
    const Counts want = described(placed, &n_optional);
    // Each architecture exercises some optional ops (its biases or norms).
    EXPECT_GT(n_optional, 0);
    std::vector<float> hidden;
    for (const std::vector<int32_t>& batch : {std::vector<int32_t>{5, 9, 14, 3, 7}, std::vector<int32_t>{11}}) {
        cpu.counts.clear();
        const int32_t last = static_cast<int32_t>(batch.size() - 1);
        program.forward(batch, kv, {&last, 1}, hidden);
        EXPECT_EQ(show(cpu.counts), show(want)) << GetParam() << ", a batch of " << batch.size();
    }
}

INSTANTIATE_TEST_SUITE_P(TinyArchitectures, LayerOps, ::testing::Values("tiny-gemma3", "tiny-qwen2", "tiny-qwen3"));

// The small ops the cost model counts per block: the unfused lists (the CPU's ops, checked
// against a pass above) and, on the GPU's fused ops, one prologue (biases, q/k norms, RoPE, KV
// stores), one block end (post norm and residual add, with the next input norm), the attention
// output's quantization and the activation; optional tensors change only the unfused count.
TEST(LayerOpCounts, FusedBlocksCountOneKernelPerFusedOp) {
    const auto none = [](TensorRole) { return false; };
    const auto all = [](TensorRole) { return true; };
    // Attention: input norm, 2 RoPE, 2 KV stores, the residual add, 2 quantizations (normed
    // input, attention output); + 3 biases, 2 q/k norms, the post norm.
    EXPECT_EQ(block_small_ops(attention_block_ops(), none), 8);
    EXPECT_EQ(block_small_ops(attention_block_ops(), all), 14);
    EXPECT_EQ(block_small_ops(attention_block_ops(), none, true), 3);
    EXPECT_EQ(block_small_ops(attention_block_ops(), all, true), 3);
    // FFN: input norm, activation, residual add, 2 quantizations (normed input, activation).
    EXPECT_EQ(block_small_ops(ffn_block_ops(), none), 5);
    EXPECT_EQ(block_small_ops(ffn_block_ops(), all), 6);
    EXPECT_EQ(block_small_ops(ffn_block_ops(), none, true), 2);
    EXPECT_EQ(block_small_ops(ffn_block_ops(), all, true), 2);
}

}  // namespace
}  // namespace strata
