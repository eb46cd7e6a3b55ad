// The residual stream at block boundaries (layer_program.h add_residual, input_norm): a block's
// x += proj and the next block's input norm, one fused op (Backend::add_rms_norm) when both run
// on the same backend. The add always happens where the block ends, so the residual stream is
// right whatever the next block does; the normed input it leaves is used only by the block it
// was made for (same layer, site, backend and buffer), else that block norms x itself. A
// recorded graph replays both halves as recorded: a producer in one segment and its consumer in
// the next give the same values eagerly and replayed.
#include "engine/runtime/layer_program.h"

namespace strata {

std::optional<LayerProgram::NextNorm> LayerProgram::next_norm(int il, NormSite site, int hb, int64_t n) {
    if (il >= config_.n_layer) return std::nullopt;  // the output norm takes only the output rows
    const PlacedLayer& w = model_.layer(il);
    if (site == NormSite::Attention) {
        if (projection_home(il, n) != hb) return std::nullopt;
        return NextNorm{&w.attn_norm, exec_.act(hb, kCur, config_.n_embd, n)};
    }
    if (!w.moe.experts.empty()) {  // moe_router's: the head of its kRouter block
        if (exec_.index_of(w.moe.router.backend) != hb) return std::nullopt;
        const Tensor block = exec_.act(hb, kRouter, config_.n_embd + config_.moe.n_expert, n);
        return NextNorm{&w.ffn_norm, Tensor::contiguous(GgmlType::F32, block.data, {config_.n_embd, n}, block.memory)};
    }
    if (sparse_ != nullptr || exec_.part_backend(w.ffn.front(), n) != hb) return std::nullopt;
    return NextNorm{&w.ffn_norm, exec_.act(hb, kCur, config_.n_embd, n)};
}

void LayerProgram::add_residual(int il, NormSite site, int hb, Tensor& x, Tensor& proj, const SmallWeight& post_norm) {
    prenormed_ = {};
    Backend& b = exec_.backend(hb);
    const float eps = static_cast<float>(config_.rms_eps);
    const Tensor* post = post_norm.present() ? &post_norm.on(hb) : nullptr;
    const std::optional<NextNorm> next = next_norm(il, site, hb, x.ne[1]);
    if (!next) {
        if (post != nullptr) b.rms_norm(proj, post, eps, proj);
        b.add(x, proj, x);
        return;
    }
    Tensor out = next->out;
    b.add_rms_norm(x, proj, post, &next->weight->on(hb), eps, out);
    prenormed_ = Prenormed{il, site, hb, out.data, out.ne};
}

void LayerProgram::input_norm(int il, NormSite site, int hb, const Tensor& x, const SmallWeight& weight, Tensor& out) {
    const Prenormed p = prenormed_;
    prenormed_ = {};
    if (p.il == il && p.site == site && p.hb == hb && p.out == out.data && p.ne == out.ne) return;
    exec_.backend(hb).rms_norm(x, &weight.on(hb), static_cast<float>(config_.rms_eps), out);
}

}  // namespace strata
