// The layer program's FFN with activation sparsity (sparse_ffn.h) and its calibration hook
// (activation_observer.h). Decode (one token) reads only the active rows of ffn_up and of the
// neuron-major ffn_down (Backend::sparse_gated_ffn), or of ffn_up alone where the layer keeps no
// copy (ffn_down read whole: Backend::sparse_gated_activation); batches compute the dense products with
// the same mask (Backend::thresholded_gated_activation), since a batch's active sets together
// cover most neurons and the dense kernels read each weight once for the whole batch.
#include <algorithm>
#include <vector>

#include "engine/core/error.h"
#include "engine/model/model_config.h"
#include "engine/runtime/activation_observer.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/sparse_ffn.h"
#include "predictor/ffn_predictor.h"

namespace strata {
namespace {

// The counts on the GPU as an i64 [2 * n_layer] tensor.
Tensor device_counts_tensor(const Buffer& buf, int n_layer) {
    return Tensor::contiguous(GgmlType::I64, buf.data(), {2 * static_cast<int64_t>(n_layer)}, MemoryKind::Device);
}

}  // namespace

void LayerProgram::set_sparse(const SparseFfn* sparse) {
    if (sparse != nullptr && sparse->n_layer() != model_.n_layer()) {
        throw ArgumentError(cat("the sparse FFN has ", sparse->n_layer(), " layers, the model ", model_.n_layer()));
    }
    sparse_ = sparse;
    hot_cold_ = nullptr;  // built on the previous sparse FFN, if any
    sparsity_counts_.clear();  // dense: no counts
    sparse_device_counts_.reset();
    if (sparse_ == nullptr) return;
    if (exec_.gpu() >= 0) {
        const uint64_t bytes = 2 * sizeof(uint64_t) * static_cast<uint64_t>(model_.n_layer());
        sparse_device_counts_ = exec_.backend(exec_.gpu()).allocate(bytes, "sparsity counts");
    }
    reset_sparsity_counts();
}

void LayerProgram::reset_sparsity_counts() {
    sparsity_counts_.assign(static_cast<size_t>(model_.n_layer()), SparsityCount{});
    if (sparse_device_counts_.size() == 0) return;
    std::vector<int64_t> zeros(2 * static_cast<size_t>(model_.n_layer()), 0);
    const Tensor host = Tensor::contiguous(GgmlType::I64, zeros.data(), {static_cast<int64_t>(zeros.size())});
    Tensor dev = device_counts_tensor(sparse_device_counts_, model_.n_layer());
    exec_.backend(exec_.gpu()).copy_in(host, dev);
}

const std::vector<LayerProgram::SparsityCount>& LayerProgram::sparsity_counts() const {
    sparsity_view_ = sparsity_counts_;
    if (sparse_device_counts_.size() == 0) return sparsity_view_;
    std::vector<int64_t> counts(2 * static_cast<size_t>(model_.n_layer()), 0);
    Tensor host = Tensor::contiguous(GgmlType::I64, counts.data(), {static_cast<int64_t>(counts.size())});
    exec_.backend(exec_.gpu()).copy_out(device_counts_tensor(sparse_device_counts_, model_.n_layer()), host);
    for (size_t il = 0; il < sparsity_view_.size(); ++il) {
        sparsity_view_[il].evaluated += static_cast<uint64_t>(counts[2 * il]);
        sparsity_view_[il].active += static_cast<uint64_t>(counts[2 * il + 1]);
    }
    return sparsity_view_;
}

LayerProgram::SparsityCount LayerProgram::sparsity_total() const {
    SparsityCount t;
    for (const SparsityCount& c : sparsity_counts()) t.add(c);
    return t;
}

void LayerProgram::observe(int il, ActivationSite site, const Tensor& t) const {
    if (observer_ != nullptr) observer_->observe(il, site, t);
}

void LayerProgram::mask_ffn_input(int il, Backend& h, Tensor& cur, int64_t n) {
    const float t_in = sparse_->input_threshold(il);
    if (t_in < 0) return;
    SparsityCount& c = sparsity_counts_[static_cast<size_t>(il)];
    c.inputs += static_cast<uint64_t>(config_.n_embd * n);
    c.inputs_kept += static_cast<uint64_t>(h.mask_small_values(cur, t_in));
}

void LayerProgram::sparse_ffn_block(int il, int64_t n) {
    const PlacedLayer& w = model_.layer(il);
    STRATA_INVARIANT(w.ffn.size() == 1);  // SparseFfn refuses split FFNs
    const FfnPart& p = w.ffn.front();
    const float eps = static_cast<float>(config_.rms_eps);
    const int64_t n_ff = p.end - p.begin;
    // Decode runs where the FFN and its neuron-major copy are; a prompt batch may ship host
    // weights to the GPU as the dense FFN does (every backend with a GPU has the sparse ops).
    const int hb = n == 1 ? exec_.index_of(p.gate.backend) : exec_.part_backend(p, n);
    Backend& h = exec_.backend(hb);

    Tensor x = exec_.residual_on(hb, n);
    Tensor cur = exec_.act(hb, kCur, config_.n_embd, n);  // [n_embd, n]
    h.rms_norm(x, &w.ffn_norm.on(hb), eps, cur);
    mask_ffn_input(il, h, cur, n);
    Tensor proj = exec_.act(hb, kProj, config_.n_embd, n);  // [n_embd, n]
    const float threshold = sparse_->threshold(il);
    const LayerPredictor* predictor = h.memory_kind() != MemoryKind::Device ? sparse_->predictor(il) : nullptr;
    int64_t active = 0;
    if (predictor != nullptr && n == 1) {
        active = predicted_ffn(il, *predictor, p, hb, cur, proj);
    } else {
        Tensor gate = exec_.act(hb, kGate, n_ff, n);  // [n_ff, n]
        // With input sparsity and an input-major gate, decode reads the nonzero inputs' columns.
        const InputMajorQ4K* gate_im = n == 1 ? sparse_->gate_input_major(il) : nullptr;
        if (gate_im != nullptr) {
            h.input_major_matvec(*gate_im, cur, gate);
        } else {
            exec_.matmul_local(p.gate, hb, cur, gate);
        }
        if (n == 1 && !sparse_->has_copy(il)) {
            active = sparse_up_whole_down(il, p, hb, cur, gate, proj);
        } else if (n == 1) {
            SparseFfnArgs args{&gate, &cur, &p.up.tensor, &sparse_->down_t(il), config_.activation, threshold};
            // A GPU counts on the device (no wait inside a recorded decode graph; replays count too).
            if (hb == exec_.gpu() && sparse_device_counts_.size() > 0) {
                args.counts = static_cast<uint64_t*>(sparse_device_counts_.data()) + 2 * il;
            }
            active = h.sparse_gated_ffn(args, proj);
        } else {
            Tensor up = exec_.act(hb, kUp, n_ff, n);
            exec_.matmul_local(p.up, hb, cur, up);
            active = h.thresholded_gated_activation(gate, up, config_.activation, threshold, gate);
            // The same function as decode's: a neuron the predictor did not name stays off.
            if (predictor != nullptr) active = mask_to_predicted(il, *predictor, hb, cur, gate);
            exec_.matmul_local(p.down, hb, gate, proj);
        }
    }
    if (active >= 0) {  // else counted on the device
        SparsityCount& c = sparsity_counts_[static_cast<size_t>(il)];
        c.evaluated += static_cast<uint64_t>(n_ff * n);
        c.active += static_cast<uint64_t>(active);
    }
    add_residual(il + 1, NormSite::Attention, hb, x, proj, w.post_ffw_norm);
}

// Decode of a layer without a neuron-major copy: the active rows of up, the masked activations,
// then ffn_down read whole, or its active columns where it has an input-major copy.
int64_t LayerProgram::sparse_up_whole_down(int il, const FfnPart& p, int hb, const Tensor& cur, const Tensor& gate,
                                           Tensor& proj) {
    Tensor masked = exec_.act(hb, kUp, gate.ne[0], 1);
    SparseFfnArgs args{&gate, &cur, &p.up.tensor, nullptr, config_.activation, sparse_->threshold(il)};
    if (hb == exec_.gpu() && sparse_device_counts_.size() > 0) {
        args.counts = static_cast<uint64_t*>(sparse_device_counts_.data()) + 2 * il;
    }
    const int64_t active = exec_.backend(hb).sparse_gated_activation(args, masked);
    if (const InputMajorQ4K* down_im = sparse_->down_input_major(il)) {
        exec_.backend(hb).input_major_matvec(*down_im, masked, proj);  // the active neurons' columns
    } else {
        exec_.matmul_local(p.down, hb, masked, proj);
    }
    return active;
}

int64_t LayerProgram::predicted_ffn(int il, const LayerPredictor& predictor, const FfnPart& p, int hb,
                                    const Tensor& cur, Tensor& proj) {
    Backend& h = exec_.backend(hb);
    STRATA_INVARIANT(h.memory_kind() != MemoryKind::Device && p.begin == 0 && p.end == predictor.n_ff);
    const int64_t n_ff = predictor.n_ff;
    predicted_rows_.resize(static_cast<size_t>(n_ff));
    predictor_scratch_.resize(static_cast<size_t>(n_ff + predictor.rank));
    const int64_t nc = predictor.predict(static_cast<const float*>(cur.data), predicted_rows_.data(),
                                         predictor_scratch_.data(), std::max(1, h.capabilities().host_threads));
    const PredictedFfnArgs args{&cur, &p.gate.tensor, &p.up.tensor, &sparse_->down_t(il), predicted_rows_.data(), nc,
                                config_.activation, sparse_->threshold(il)};
    SparsityCount& c = sparsity_counts_[static_cast<size_t>(il)];
    c.predicted += static_cast<uint64_t>(n_ff);
    c.candidates += static_cast<uint64_t>(nc);
    return h.predicted_sparse_gated_ffn(args, proj);
}

int64_t LayerProgram::mask_to_predicted(int il, const LayerPredictor& predictor, int hb, const Tensor& cur, Tensor& y) {
    const int64_t n_ff = predictor.n_ff, n = cur.n_rows();
    STRATA_INVARIANT(y.ne[0] == n_ff && y.n_rows() == n);
    predicted_rows_.resize(static_cast<size_t>(n_ff));
    predictor_scratch_.resize(static_cast<size_t>(n_ff + predictor.rank));
    const int n_threads = std::max(1, exec_.backend(hb).capabilities().host_threads);
    int64_t kept = 0, candidates = 0;
    for (int64_t t = 0; t < n; ++t) {
        const auto* x = reinterpret_cast<const float*>(static_cast<const uint8_t*>(cur.data) + t * cur.nb[1]);
        auto* row = reinterpret_cast<float*>(static_cast<uint8_t*>(y.data) + t * y.nb[1]);
        const int64_t nc = predictor.predict(x, predicted_rows_.data(), predictor_scratch_.data(), n_threads);
        candidates += nc;
        int64_t next = 0;  // index into the ascending candidates
        for (int64_t i = 0; i < n_ff; ++i) {
            if (next < nc && predicted_rows_[static_cast<size_t>(next)] == i) {
                ++next;
                kept += row[i] != 0.0f;
                continue;
            }
            row[i] = 0.0f;
        }
    }
    SparsityCount& c = sparsity_counts_[static_cast<size_t>(il)];
    c.predicted += static_cast<uint64_t>(n_ff * n);
    c.candidates += static_cast<uint64_t>(candidates);
    return kept;
}

}  // namespace strata
