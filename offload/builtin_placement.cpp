// The built-in placement from budgets (builtin_placement.h states the order).
#include "offload/builtin_placement.h"

#include <algorithm>
#include <optional>
#include <string>

#include "engine/core/error.h"
#include "offload/tensor_class.h"

namespace strata {

namespace {

struct LayerFfn {
    std::optional<FfnTensors> tensors;
    int64_t gpu_end = 0;
    int64_t ram_end = 0;
    bool ram_done = false;
    bool pinned = false;  // placed by the rules: on the GPU (gpu_end == n_ff) or off it
};

class Planner {
  public:
    Planner(const TensorTable& table, const BuiltinPlacementParams& params)
        : table_(table), params_(params) {}

    Placement run() {
        classify();
        size_kv();
        check_budgets();
        pins_ = resolve_rules(table_, params_.rules);
        place_pinned();
        fill_gpu();
        place_token_embd();
        fill_ram();
        return result();
    }

  private:
    void classify() {
        classes_ = classify_tensors(table_);
        tier_.assign(table_.tensors.size(), std::nullopt);
        ffn_.resize(classes_.ffn.size());
        for (size_t layer = 0; layer < ffn_.size(); ++layer) ffn_[layer].tensors = classes_.ffn[layer];
        if (classes_.output >= 0) output_ = static_cast<size_t>(classes_.output);
        if (classes_.token_embd >= 0) token_embd_ = static_cast<size_t>(classes_.token_embd);
    }

    void size_kv() {
        if (params_.n_ctx <= 0) {
            throw ArgumentError(
                cat("built-in placement: n_ctx must be positive, got ", params_.n_ctx));
        }
        const auto n_layer = static_cast<size_t>(std::max(table_.n_layer, 0));
        kv_bytes_ = params_.kv_bytes;
        if (kv_bytes_.empty()) {
            for (int layer = 0; layer < table_.n_layer; ++layer) {
                kv_bytes_.push_back(
                    kv_bytes_per_layer(table_, layer, params_.n_ctx, params_.kv_type));
            }
        } else if (kv_bytes_.size() != n_layer) {
            throw ArgumentError(cat("built-in placement: ", kv_bytes_.size(),
                                    " KV sizes given for ", n_layer, " layers"));
        }
        kv_.assign(n_layer, Tier::Ram);
    }

    // Things a token cannot run without holding in memory; they never go to DISK.
    void check_budgets() {
        uint64_t small = 0, embd = 0, kv = 0;
        for_class(TensorClass::Small, [&](size_t i) { small += table_.tensors[i].bytes; });
        if (token_embd_) embd = table_.tensors[*token_embd_].bytes;
        // The executor never streams the output matrix (every token reads all of it).
        const uint64_t out = output_ ? table_.tensors[*output_].bytes : 0;
        for (uint64_t b : kv_bytes_)
            kv += b;
        must_left_ = small + embd + out + kv;

        const Budgets& b = params_.budgets;
        const uint64_t gpu_reserved = checked_gpu_reserve(b, params_.gpu_reserved_bytes);
        gpu_left_ = b.gpu_bytes - gpu_reserved;
        gpu_open_ = gpu_left_ > 0;
        const uint64_t ram_reserved = params_.ram_reserved_bytes;
        const uint64_t needed = must_left_ + ram_reserved + gpu_reserved;
        if (must_left_ > gpu_left_ + (b.ram_bytes - std::min(b.ram_bytes, ram_reserved)) ||
            b.ram_bytes < ram_reserved) {
            throw BudgetError(
                cat("the model needs at least ", format_bytes(needed),
                    " of RAM+VRAM for what must stay in memory: the embedding table (",
                    format_bytes(embd), "), ", out > 0 ? cat("the output matrix (", format_bytes(out), "), ") : std::string(),
                    "norms and biases (", format_bytes(small),
                    "), the KV cache of ", params_.n_ctx, " cells (", format_bytes(kv),
                    "), disk staging and activations in RAM (", format_bytes(ram_reserved),
                    ") and GPU workspace (", format_bytes(gpu_reserved), "); the budgets give ",
                    format_bytes(b.gpu_bytes), " VRAM + ", format_bytes(b.ram_bytes), " RAM"));
        }
        ram_left_ = b.ram_bytes - ram_reserved;
    }

    // GPU bytes an optional item may take and still leave GPU+RAM room for must_left_.
    uint64_t gpu_room() const {
        if (!gpu_open_) return 0;
        const uint64_t keep = must_left_ > ram_left_ ? must_left_ - ram_left_ : 0;
        return gpu_left_ > keep ? gpu_left_ - keep : 0;
    }

    bool try_gpu(uint64_t bytes) {
        if (bytes > gpu_room()) {
            gpu_open_ = false;
            return false;
        }
        gpu_left_ -= bytes;
        return true;
    }

    // A must-stay item: the GPU while it is open and has room, else RAM, else the GPU's leftover.
    Tier place_must(uint64_t bytes, const std::string& what, bool gpu_ok = true) {
        must_left_ -= bytes;
        if (!gpu_ok) {
            if (bytes <= ram_left_) {
                ram_left_ -= bytes;
                return Tier::Ram;
            }
            throw BudgetError(cat(what, " (", format_bytes(bytes), ") is kept off the GPU by -ngl/-ot and RAM has ",
                                  format_bytes(ram_left_), " left; raise the RAM budget by ",
                                  format_bytes(bytes - ram_left_), " or let the GPU hold it"));
        }
        if (gpu_open_ && bytes <= gpu_left_) {
            gpu_left_ -= bytes;
            return Tier::Gpu;
        }
        gpu_open_ = false;
        if (bytes <= ram_left_) {
            ram_left_ -= bytes;
            return Tier::Ram;
        }
        if (bytes <= gpu_left_) {
            gpu_left_ -= bytes;
            return Tier::Gpu;
        }
        throw BudgetError(cat(what, " (", format_bytes(bytes), ") fits neither the GPU's ",
                              format_bytes(gpu_left_), " nor RAM's ", format_bytes(ram_left_),
                              " left; raise the RAM budget by ", format_bytes(bytes - ram_left_)));
    }

    bool is_must(size_t i) const {
        return cls(i) == TensorClass::Small || (token_embd_ && i == *token_embd_) || (output_ && i == *output_);
    }

    // The tensors the rules put on the GPU, before anything else (FFN triples whole).
    void place_pinned() {
        const uint64_t bytes = pinned_gpu_bytes(table_, pins_);
        if (bytes == 0) return;
        if (bytes > gpu_left_) {
            throw BudgetError(cat("-ot puts ", format_bytes(bytes), " of tensors on the GPU but its budget leaves ",
                                  format_bytes(gpu_left_), " for weights; raise --gpu-mem or match fewer tensors"));
        }
        gpu_left_ -= bytes;
        for (size_t i = 0; i < tier_.size(); ++i) {
            if (!pins_.on_gpu(i)) continue;
            if (is_must(i)) must_left_ -= table_.tensors[i].bytes;
            if (cls(i) != TensorClass::Ffn) {
                tier_[i] = Tier::Gpu;
                continue;
            }
            LayerFfn& ffn = ffn_[static_cast<size_t>(layer_of(i))];
            ffn.gpu_end = ffn.ram_end = ffn.tensors->n_ff;
            ffn.pinned = true;
        }
    }

    void place_tensor_gpu_phase(size_t i) {
        const TensorEntry& t = table_.tensors[i];
        if (tier_[i]) return;  // pinned to the GPU
        if (!pins_.gpu_ok(i)) {  // kept off the GPU: skipped without closing it
            if (is_must(i)) tier_[i] = place_must(t.bytes, cat("tensor ", t.name), false);
            return;
        }
        if (is_must(i)) {
            tier_[i] = place_must(t.bytes, cat("tensor ", t.name));
        } else if (try_gpu(t.bytes)) {
            tier_[i] = Tier::Gpu;
        }
    }

    // Largest end in (start, n_ff] on a granule boundary whose slice fits `room`; start if none.
    static int64_t fit_neurons(const FfnTensors& f, int64_t start, uint64_t room) {
        int64_t end = start;
        while (end < f.n_ff) {
            const int64_t next = std::min(end + f.granule, f.n_ff);
            if (ffn_slice_bytes(f, start, next) > room) break;
            end = next;
        }
        return end;
    }

    TensorClass cls(size_t i) const { return classes_.of[i]; }
    int layer_of(size_t i) const { return classes_.layer[i]; }
    // A MoE layer's 3-D expert tensors go after every layer's other matrices.
    bool is_expert(size_t i) const { return cls(i) == TensorClass::LayerOther && table_.tensors[i].ne[2] > 1; }

    void for_class(TensorClass c, auto&& fn) {
        for (size_t i = 0; i < classes_.of.size(); ++i) {
            if (cls(i) == c) fn(i);
        }
    }

    void fill_gpu() {
        for_class(TensorClass::Small, [&](size_t i) { place_tensor_gpu_phase(i); });
        for (int layer = 0; layer < table_.n_layer; ++layer) {
            // A layer's KV and attention go to the GPU together or not at all, so that its
            // attention runs where its KV cache is.
            const auto l = static_cast<size_t>(layer);
            std::vector<size_t> attn;
            uint64_t attn_bytes = 0;
            bool allowed = pins_.kv_ok(layer);
            for_class(TensorClass::Attn, [&](size_t i) {
                if (layer_of(i) != layer || tier_[i]) return;
                attn.push_back(i);
                attn_bytes += table_.tensors[i].bytes;
                allowed = allowed && pins_.gpu_ok(i);
            });
            // The KV part is must-stay: only the attention weights need the room check. A layer
            // the rules keep off the GPU is skipped without closing it.
            if (!allowed) {
                kv_[l] = place_must(kv_bytes_[l], cat("the KV cache of layer ", layer), pins_.kv_ok(layer));
                continue;
            }
            if (gpu_open_ && kv_bytes_[l] + attn_bytes <= gpu_left_ && attn_bytes <= gpu_room()) {
                for (size_t i : attn)
                    tier_[i] = Tier::Gpu;
                gpu_left_ -= attn_bytes;
            } else {
                gpu_open_ = false;
            }
            kv_[l] = place_must(kv_bytes_[l], cat("the KV cache of layer ", layer));
        }
        for_class(TensorClass::Output, [&](size_t i) { place_tensor_gpu_phase(i); });
        for_class(TensorClass::GlobalOther, [&](size_t i) { place_tensor_gpu_phase(i); });
        for (int layer = 0; layer < table_.n_layer; ++layer) {
            for_class(TensorClass::LayerOther, [&](size_t i) {
                if (layer_of(i) == layer && !is_expert(i)) place_tensor_gpu_phase(i);
            });
        }
        for (int layer = 0; layer < table_.n_layer; ++layer) {
            for_class(TensorClass::LayerOther, [&](size_t i) {
                if (layer_of(i) == layer && is_expert(i)) place_tensor_gpu_phase(i);
            });
            LayerFfn& ffn = ffn_[static_cast<size_t>(layer)];
            if (!ffn.tensors || ffn.pinned) continue;
            if (!pins_.gpu_ok(static_cast<size_t>(ffn.tensors->gate - table_.tensors.data()))) continue;
            const uint64_t room = gpu_room();
            ffn.gpu_end = fit_neurons(*ffn.tensors, 0, room);
            if (params_.whole_ffns && ffn.gpu_end < ffn.tensors->n_ff) ffn.gpu_end = 0;
            gpu_left_ -= ffn_slice_bytes(*ffn.tensors, 0, ffn.gpu_end);
            if (ffn.gpu_end < ffn.tensors->n_ff) gpu_open_ = false;
            ffn.ram_end = ffn.gpu_end;
        }
    }

    void place_token_embd() {
        if (!token_embd_ || tier_[*token_embd_]) return;
        const TensorEntry& t = table_.tensors[*token_embd_];
        if (!pins_.gpu_ok(*token_embd_)) {
            tier_[*token_embd_] = place_must(t.bytes, "the embedding table", false);
            return;
        }
        if (gpu_open_ && t.bytes <= gpu_left_) {
            must_left_ -= t.bytes;
            gpu_left_ -= t.bytes;
            tier_[*token_embd_] = Tier::Gpu;
            return;
        }
        gpu_open_ = false;  // RAM first: only get_rows reads it
        tier_[*token_embd_] = place_must(t.bytes, "the embedding table");
    }

    void fill_ram() {
        for (size_t i = 0; i < tier_.size(); ++i) {
            if (tier_[i]) continue;
            const TensorEntry& t = table_.tensors[i];
            if (cls(i) == TensorClass::Ffn) {
                // The three tensors take their turn at the first one's position in the file.
                LayerFfn& ffn = ffn_[static_cast<size_t>(layer_of(i))];
                if (ffn.ram_done) continue;
                ffn.ram_done = true;
                // Only whole FFN tensors stream from DISK (a neuron range of ffn_down is not one
                // byte range in the file): the rest of the layer goes to RAM or all to DISK.
                const int64_t n_ff = ffn.tensors->n_ff;
                const uint64_t rest = ffn_slice_bytes(*ffn.tensors, ffn.gpu_end, n_ff);
                if (rest <= ram_left_) {
                    ram_left_ -= rest;
                    ffn.ram_end = n_ff;
                } else {
                    gpu_left_ += ffn_slice_bytes(*ffn.tensors, 0, ffn.gpu_end);  // left unused
                    ffn.gpu_end = 0;
                    ffn.ram_end = 0;
                }
                continue;
            }
            if (t.bytes <= ram_left_) {
                ram_left_ -= t.bytes;
                tier_[i] = Tier::Ram;
            } else {
                tier_[i] = Tier::Disk;
            }
        }
    }

    Placement result() const {
        Placement p;
        p.budgets = params_.budgets;
        p.n_ctx = params_.n_ctx;
        p.kv_type = params_.kv_type;
        p.kv = kv_;
        for (size_t layer = 0; layer < ffn_.size(); ++layer) {
            const LayerFfn& f = ffn_[layer];
            if (!f.tensors || whole_tier(f)) continue;
            p.ffn_splits.push_back({static_cast<int>(layer), f.gpu_end, f.ram_end});
        }
        for (size_t i = 0; i < tier_.size(); ++i) {
            const TensorEntry& t = table_.tensors[i];
            if (cls(i) == TensorClass::Ffn) {
                const LayerFfn& f = ffn_[static_cast<size_t>(layer_of(i))];
                if (const auto tier = whole_tier(f)) p.tensors.push_back({t.name, *tier});
                continue;
            }
            STRATA_INVARIANT(tier_[i].has_value());
            p.tensors.push_back({t.name, *tier_[i]});
        }
        return p;
    }

    // The one tier of a layer's FFN when all its neurons share it (no split needed).
    static std::optional<Tier> whole_tier(const LayerFfn& f) {
        const int64_t n_ff = f.tensors->n_ff;
        if (f.gpu_end == n_ff) return Tier::Gpu;
        if (f.gpu_end == 0 && f.ram_end == n_ff) return Tier::Ram;
        if (f.ram_end == 0) return Tier::Disk;
        return std::nullopt;
    }

    const TensorTable& table_;
    const BuiltinPlacementParams& params_;
    TensorClasses classes_;
    std::vector<std::optional<Tier>> tier_;  // per table tensor; FFN triples live in ffn_
    std::vector<LayerFfn> ffn_;              // per layer
    std::vector<uint64_t> kv_bytes_;
    std::vector<Tier> kv_;
    ResolvedRules pins_;
    std::optional<size_t> token_embd_;
    std::optional<size_t> output_;  // untied output.weight
    uint64_t gpu_left_ = 0;
    uint64_t ram_left_ = 0;
    uint64_t must_left_ = 0;  // bytes of must-stay items not yet placed
    bool gpu_open_ = false;
};

}  // namespace

uint64_t checked_gpu_reserve(const Budgets& b, uint64_t gpu_reserved_bytes) {
    const uint64_t gpu_reserved = b.gpu_bytes > 0 ? gpu_reserved_bytes : 0;
    if (b.gpu_bytes > 0 && b.gpu_bytes < gpu_reserved) {
        throw BudgetError(cat("the GPU budget ", format_bytes(b.gpu_bytes), " is below the ",
                              format_bytes(gpu_reserved),
                              " the GPU needs for activations and workspace; give it at "
                              "least that, or 0 to run without the GPU"));
    }
    return gpu_reserved;
}

Placement builtin_placement(const TensorTable& table, const BuiltinPlacementParams& params) {
    return Planner(table, params).run();
}

}  // namespace strata
