// The layer program's FFN with hot neurons on the GPU and cold ones on the CPU (hot_cold_ffn.h).
// Per layer: the normed input goes to the hot backend (one transfer), which computes its hot
// range (thresholded where it can, else dense) into a partial output; meanwhile the CPU computes
// the cold gate rows, scatters them over a full gate vector (hot entries 0, so act(0) = 0 keeps
// them out of the active set) and runs the sparse FFN over the full ffn_up and neuron-major
// ffn_down (decode; ffn_down read whole where the layer keeps no copy), or the dense products
// with the mask (batches); the partial output comes back (one transfer) and is added.
#include <algorithm>

#include "engine/core/error.h"
#include "engine/model/model_config.h"
#include "engine/runtime/hot_cold_ffn.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/sparse_ffn.h"

namespace strata {
namespace {

// full [n_ff, n] = cold [n_cold, n] scattered to its neurons' indices, 0 elsewhere.
void scatter_cold(const HotColdFfn::Layer& l, const Tensor& cold, Tensor& full, int64_t n) {
    const auto n_cold = static_cast<int64_t>(l.cold_index.size());
    for (int64_t t = 0; t < n; ++t) {
        float* dst = static_cast<float*>(full.data) + t * l.n_ff;
        const float* src = static_cast<const float*>(cold.data) + t * n_cold;
        std::fill(dst, dst + l.n_ff, 0.0f);
        for (int64_t j = 0; j < n_cold; ++j) dst[l.cold_index[static_cast<size_t>(j)]] = src[j];
    }
}

}  // namespace

void LayerProgram::set_hot_cold(const HotColdFfn* hot_cold) {
    if (hot_cold != nullptr && (sparse_ != &hot_cold->sparse() || hot_cold->n_layer() != model_.n_layer() ||
                                model_.backend_index(hot_cold->hot_backend()) < 0)) {
        throw ArgumentError("the hot/cold FFN was built for another sparse FFN or placed model than this program's");
    }
    hot_cold_ = hot_cold;
}

void LayerProgram::set_gpu_ffn_only(bool on) {
    if (on && model_.disk_stream() != nullptr) {
        throw UnsupportedError("the self-draft (--spec self) skips the FFN weights off the GPU, and this placement streams "
                               "weights from disk, whose reads go in one fixed cycle: use --spec lookup, or budgets that "
                               "keep the model in RAM (--ram-mem)");
    }
    gpu_ffn_only_ = on;
    gpu_parts_.assign(on ? static_cast<size_t>(model_.n_layer()) : 0, {});
    for (size_t il = 0; il < gpu_parts_.size(); ++il) {
        for (const FfnPart& p : model_.layer(static_cast<int>(il)).ffn) {
            if (!is_host(*p.gate.backend)) gpu_parts_[il].push_back(p);
        }
    }
}

void LayerProgram::hot_cold_ffn_block(int il, int64_t n) {
    const PlacedLayer& w = model_.layer(il);
    const HotColdFfn::Layer& l = hot_cold_->layer(il);
    if (gpu_ffn_only_ && l.hot == 0) {  // the self-draft: no hot range, nothing to add
        prenormed_ = {};
        return;
    }
    const bool run_cold = l.hot < l.n_ff && !gpu_ffn_only_;  // the self-draft skips the cold part
    const FfnPart& p = w.ffn.front();  // SparseFfn: one part, in RAM
    const float eps = static_cast<float>(config_.rms_eps);
    const float threshold = sparse_->threshold(il);
    const int hb = exec_.index_of(p.gate.backend);
    const int gb = exec_.index_of(hot_cold_->hot_backend());
    Backend& h = exec_.backend(hb);

    Tensor x = exec_.residual_on(hb, n);
    Tensor cur = exec_.act(hb, kCur, config_.n_embd, n);
    h.rms_norm(x, &w.ffn_norm.on(hb), eps, cur);
    mask_ffn_input(il, h, cur, n);  // before the hot range sees it: one function on both sides
    int64_t active = 0;
    // (neuron, token) pairs counted here (the rest on the device)
    int64_t evaluated = (run_cold ? l.n_ff : l.hot) * n;
    // The hot range first, so a device computes it while the CPU does the cold rest.
    Tensor part;
    if (l.hot > 0) {
        Backend& g = exec_.backend(gb);
        Tensor in = cur;
        if (gb != hb) {
            in = exec_.act(gb, kMoeIn, config_.n_embd, n);
            exec_.transfer(hb, cur, gb, in);
        }
        Tensor gate = exec_.act(gb, kMmIn, l.hot, n);
        Tensor up = exec_.act(gb, kMmOut, l.hot, n);
        g.matmul(l.gate_hot, in, gate);
        // Decode on a GPU that counts on the device: the active hot rows of up only, and no wait
        // for the count, so the CPU's cold part runs while the GPU computes.
        const bool device_counts = n == 1 && gb == exec_.gpu() && sparse_device_counts_.size() > 0 &&
                                   hot_cold_->masks_hot() && g.capabilities().sparse_activation;
        Tensor h = gate;  // the masked activations the hot ffn_down columns read
        if (device_counts) {
            SparseFfnArgs args{&gate, &in, &l.up_hot, nullptr, config_.activation, threshold};
            args.counts = static_cast<uint64_t*>(sparse_device_counts_.data()) + 2 * il;
            g.sparse_gated_activation(args, up);
            h = up;
            evaluated -= l.hot;
        } else if (hot_cold_->masks_hot()) {
            g.matmul(l.up_hot, in, up);
            active += g.thresholded_gated_activation(gate, up, config_.activation, threshold, gate);
        } else {
            g.matmul(l.up_hot, in, up);
            g.gated_activation(gate, up, config_.activation, gate);
            active += l.hot * n;
        }
        part = exec_.act(gb, kMoeOut, config_.n_embd, n);
        g.matmul(l.down_hot, h, part);
    }
    Tensor gate = exec_.act(hb, kGate, l.n_ff, n);  // [n_ff, n]
    Tensor proj = exec_.act(hb, kProj, config_.n_embd, n);
    if (run_cold) {
        Tensor cold = exec_.act(hb, kUp, l.n_ff - l.hot, n);
        h.matmul(l.gate_cold, cur, cold);
        scatter_cold(l, cold, gate, n);
        if (n == 1 && !sparse_->has_copy(il)) {  // ffn_down read whole (the copy would not pay)
            active += sparse_up_whole_down(il, p, hb, cur, gate, proj);
        } else if (n == 1) {
            SparseFfnArgs args{&gate, &cur, &p.up.tensor, &sparse_->down_t(il), config_.activation, threshold};
            active += h.sparse_gated_ffn(args, proj);
        } else {
            Tensor up = exec_.act(hb, kUp, l.n_ff, n);
            exec_.matmul_local(p.up, hb, cur, up);
            active += h.thresholded_gated_activation(gate, up, config_.activation, threshold, gate);
            exec_.matmul_local(p.down, hb, gate, proj);
        }
        if (threshold < 0) active -= l.hot * n;  // S = 0 keeps the zeroed hot entries too (adding 0)
    } else {
        std::fill_n(static_cast<float*>(proj.data), config_.n_embd * n, 0.0f);
    }
    if (l.hot > 0) {
        if (gb != hb) {
            Tensor back = exec_.act(hb, kPartTmp, config_.n_embd, n);
            exec_.transfer(gb, part, hb, back);
            part = back;
        }
        h.add(proj, part, proj);
    }
    SparsityCount& c = sparsity_counts_[static_cast<size_t>(il)];
    c.evaluated += static_cast<uint64_t>(evaluated);
    c.active += static_cast<uint64_t>(active);
    add_residual(il + 1, NormSite::Attention, hb, x, proj, w.post_ffw_norm);
}

}  // namespace strata
