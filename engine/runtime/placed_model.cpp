// Residency: loading weights into their tiers (placed_model.h).
#include "engine/runtime/placed_model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "engine/core/error.h"
#include "engine/model/fused_tensors.h"
#include "engine/runtime/model.h"

namespace strata {
namespace {

std::string layer_name(int il, const char* suffix) { return cat("blk.", il, ".", suffix); }

// After a contiguous weight was copied (to the GPU, or packed in RAM), its pages of the
// (private, read-only) file mapping are dropped from the process, so resident memory counts
// only RAM-tier weights once. Only
// pages wholly inside the range: a neighbour's weights may share the edge pages.
void drop_mapped_pages(const Tensor& view) {
    if (!view.is_contiguous() || view.memory != MemoryKind::Host) return;
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(view.data);
    const uintptr_t first = (begin + page - 1) / page * page;
    const uintptr_t last = (begin + view.n_bytes()) / page * page;
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

// A disk read must cover the tensor's bytes in its shard (a fused one's, for phi3's q/k/v and gate/up).
const TensorInfo& info_of(const Model& model, const std::string& name) {
    return model.file().tensor(file_tensor_name(model.config(), name));
}

}  // namespace

PlacedModel::~PlacedModel() = default;

int PlacedModel::backend_index(const Backend* b) const {
    for (size_t i = 0; i < backends_.size(); ++i)
        if (backends_[i] == b) return static_cast<int>(i);
    return -1;
}

int PlacedModel::use_backend(Backend* b) {
    const int i = backend_index(b);
    if (i >= 0) return i;
    backends_.push_back(b);
    return static_cast<int>(backends_.size()) - 1;
}

PlacedWeight PlacedModel::place(const Tensor& view, const std::string& name, Tier tier,
                                const TierBackends& tiers) {
    PlacedWeight w;
    if (view.data == nullptr) return w;  // the architecture has no such weight
    w.tier = tier;
    switch (tier) {
        case Tier::Gpu: {
            if (tiers.gpu == nullptr) {
                throw UnsupportedError(cat("the placement puts ", name, " on the GPU, but no GPU backend is available"));
            }
            w.backend = tiers.gpu;
            Buffer buf = tiers.gpu->allocate(view.n_bytes(), name);
            w.tensor = Tensor::contiguous(view.type, buf.data(), {view.ne[0], view.ne[1], view.ne[2], view.ne[3]},
                                          buf.memory());
            tiers.gpu->copy_in(view, w.tensor);
            drop_mapped_pages(view);
            stats_.gpu_weight_bytes += view.n_bytes();
            owned_.push_back(std::move(buf));
            break;
        }
        case Tier::Ram:
            w.backend = tiers.cpu;
            w.tensor = view;
            if (!view.is_contiguous() || tiers.ram_copy) {
                // A split FFN's columns of ffn_down: a strided view reads a short run of each
                // row and skips the rest, which the CPU fetches anyway (1536 of 13824 columns:
                // 1.7-2.3x slower per byte on 16 threads, 3.3x on 2; kernels_cpu_bench
                // bm_gemv_slice); a packed copy reads at the full rate, and the matrix's mapped
                // pages can go.
                Buffer buf = tiers.cpu->allocate(view.n_bytes(), name);
                w.tensor = Tensor::contiguous(view.type, buf.data(), {view.ne[0], view.ne[1], view.ne[2], view.ne[3]},
                                              buf.memory());
                copy_host_tensor(view, w.tensor);
                if (tiers.ram_copy) drop_mapped_pages(view);
                owned_.push_back(std::move(buf));
            }
            if (tiers.ram_lock && w.tensor.is_contiguous() && mlock(w.tensor.data, w.tensor.n_bytes()) == 0) {
                stats_.locked_bytes += w.tensor.n_bytes();
            }
            stats_.ram_weight_bytes += view.n_bytes();
            if (w.tensor.is_contiguous()) {
                ram_ranges_.emplace_back(static_cast<const uint8_t*>(w.tensor.data), w.tensor.n_bytes());
            }
            break;
        case Tier::Disk: {
            w.backend = tiers.cpu;
            w.tensor = view;
            if (!view.is_contiguous()) {
                throw UnsupportedError(cat("a part of ", name, " on DISK is not one contiguous byte range",
                                           " (only whole tensors and row ranges can be streamed)"));
            }
            const TensorInfo& info = info_of(model_, name);
            const uint64_t offset = info.file_offset + static_cast<uint64_t>(
                                                           static_cast<const uint8_t*>(view.data) - info.data);
            w.stream_id = stream_->add_read(info.shard, offset, view.n_bytes());
            w.tensor.data = nullptr;
            stats_.disk_weight_bytes += view.n_bytes();
            break;
        }
    }
    use_backend(w.backend);
    return w;
}

SmallWeight PlacedModel::small(const Tensor& view) {
    SmallWeight s;
    if (view.data != nullptr) s.copies.push_back(view);  // placeholder until every backend is known
    return s;
}

void PlacedModel::bind_small_weights(PlacedLayer& l, const LayerWeights& lw) {
    l.attn_norm = small(lw.attn_norm);
    l.attn_q_bias = small(lw.attn_q_bias);
    l.attn_k_bias = small(lw.attn_k_bias);
    l.attn_v_bias = small(lw.attn_v_bias);
    l.attn_q_norm = small(lw.attn_q_norm);
    l.attn_k_norm = small(lw.attn_k_norm);
    l.post_attention_norm = small(lw.post_attention_norm);
    l.ffn_norm = small(lw.ffn_norm);
    l.post_ffw_norm = small(lw.post_ffw_norm);
}

void PlacedModel::finish_small_weights() {
    auto fill = [&](SmallWeight& s, const char* what) {
        if (!s.present()) return;
        const Tensor view = s.copies.front();
        s.copies.clear();
        for (Backend* b : backends_) {
            if (is_host(*b)) {
                s.copies.push_back(view);
                continue;
            }
            Buffer buf = b->allocate(view.n_bytes(), what);
            Tensor t = Tensor::contiguous(view.type, buf.data(), {view.ne[0], view.ne[1], view.ne[2], view.ne[3]},
                                          buf.memory());
            b->copy_in(view, t);
            stats_.small_copy_bytes += view.n_bytes();
            owned_.push_back(std::move(buf));
            s.copies.push_back(t);
        }
    };
    fill(output_norm_, "output_norm");
    for (PlacedLayer& l : layers_) {
        for (SmallWeight* s : {&l.attn_norm, &l.attn_q_bias, &l.attn_k_bias, &l.attn_v_bias, &l.attn_q_norm,
                               &l.attn_k_norm, &l.post_attention_norm, &l.ffn_norm, &l.post_ffw_norm}) {
            fill(*s, "norm or bias weights");
        }
    }
}

void PlacedModel::open_disk_stream(const Placement& placement, const DiskStreamOptions& disk) {
    const ModelConfig& config = model_.config();
    bool any_disk = false;
    for (const TensorPlacement& t : placement.tensors) any_disk |= t.tier == Tier::Disk;
    for (const ExpertTiers& x : placement.expert_tiers)
        for (Tier t : x.tiers) any_disk |= t == Tier::Disk;
    for (const FfnSplit& s : placement.ffn_splits) {
        if (s.ram_end < config.n_ff.at(static_cast<size_t>(s.layer))) {
            throw UnsupportedError(cat("the placement streams neurons [", s.ram_end, ", ", config.n_ff[static_cast<size_t>(s.layer)],
                                       ") of layer ", s.layer, "'s FFN from disk; only whole FFN tensors can be on",
                                       " DISK (a neuron range of ffn_down is not contiguous in the file)"));
        }
    }
    if (any_disk) {
        std::vector<std::string> paths;
        for (int i = 0; i < model_.file().n_shards(); ++i) paths.push_back(model_.file().shard(i).path());
        stream_ = std::make_unique<DiskStream>(std::move(paths), disk);
    }
}

void PlacedModel::place_dense_ffn(int il, const LayerWeights& lw, const FfnSplit* s,
                                  const std::function<Tier(const std::string&)>& tier_of, const TierBackends& tiers,
                                  PlacedLayer& l) {
    const int64_t n_ff = model_.config().n_ff[static_cast<size_t>(il)];
    if (s == nullptr) {  // whole tensors, each in its tier
        FfnPart p{0, n_ff, {}, {}, {}};
        p.gate = place(lw.ffn_gate, layer_name(il, "ffn_gate.weight"), tier_of(layer_name(il, "ffn_gate.weight")), tiers);
        p.up = place(lw.ffn_up, layer_name(il, "ffn_up.weight"), tier_of(layer_name(il, "ffn_up.weight")), tiers);
        p.down = place(lw.ffn_down, layer_name(il, "ffn_down.weight"), tier_of(layer_name(il, "ffn_down.weight")), tiers);
        l.ffn.push_back(p);
        return;
    }
    if (s->gpu_end > 0) {
        FfnPart p{0, s->gpu_end, {}, {}, {}};
        p.gate = place(lw.ffn_gate.rows(0, s->gpu_end), layer_name(il, "ffn_gate.weight"), Tier::Gpu, tiers);
        p.up = place(lw.ffn_up.rows(0, s->gpu_end), layer_name(il, "ffn_up.weight"), Tier::Gpu, tiers);
        p.down = place(lw.ffn_down.columns(0, s->gpu_end), layer_name(il, "ffn_down.weight"), Tier::Gpu, tiers);
        l.ffn.push_back(p);
    }
    if (s->gpu_end < n_ff) {
        FfnPart p{s->gpu_end, n_ff, {}, {}, {}};
        const int64_t len = n_ff - s->gpu_end;
        p.gate = place(lw.ffn_gate.rows(s->gpu_end, len), layer_name(il, "ffn_gate.weight"), Tier::Ram, tiers);
        p.up = place(lw.ffn_up.rows(s->gpu_end, len), layer_name(il, "ffn_up.weight"), Tier::Ram, tiers);
        p.down = place(lw.ffn_down.columns(s->gpu_end, len), layer_name(il, "ffn_down.weight"), Tier::Ram, tiers);
        l.ffn.push_back(p);
    }
    // With a GPU part, both parts of ffn_down are copies (GPU memory, a packed RAM copy).
    if (s->gpu_end > 0) drop_mapped_pages(lw.ffn_down);
}

PlacedModel::PlacedModel(const Model& model, const Placement& placement, const TierBackends& tiers,
                         const DiskStreamOptions& disk, const std::function<void(int, int)>& on_layer)
    : model_(model) {
    if (tiers.cpu == nullptr || !is_host(*tiers.cpu)) {
        throw ArgumentError("PlacedModel: the RAM tier needs a host (CPU) backend");
    }
    const ModelConfig& config = model.config();
    const ModelWeights& w = model.weights();
    const std::function<Tier(const std::string&)> tier_of = [&](const std::string& name) {
        auto t = placement.tier_of(file_tensor_name(config, name));  // a fused weight goes with its tensor
        if (!t) throw FormatError(cat("the placement does not place ", name));
        return *t;
    };
    open_disk_stream(placement, disk);
    use_backend(tiers.cpu);
    if (tiers.gpu != nullptr) use_backend(tiers.gpu);

    const Tier embd_tier = tier_of("token_embd.weight");
    if (embd_tier == Tier::Disk || (!config.tied_output && tier_of("output.weight") == Tier::Disk)) {
        throw UnsupportedError("the token embedding and output matrices must be in RAM or on the GPU, not on DISK");
    }
    token_embd_ = place(w.token_embd, "token_embd.weight", embd_tier, tiers);
    output_ = config.tied_output ? token_embd_ : place(w.output, "output.weight", tier_of("output.weight"), tiers);
    output_norm_ = small(w.output_norm);
    if (present(w.rope_freqs)) rope_freqs_ = w.rope_freqs.as<const float>();

    layers_.resize(static_cast<size_t>(config.n_layer));
    for (int il = 0; il < config.n_layer; ++il) {
        const LayerWeights& lw = w.layers[static_cast<size_t>(il)];
        PlacedLayer& l = layers_[static_cast<size_t>(il)];
        const Tier kv_tier = placement.kv.at(static_cast<size_t>(il));
        l.attn_home = kv_tier == Tier::Gpu ? tiers.gpu : tiers.cpu;
        if (l.attn_home == nullptr) throw UnsupportedError(cat("layer ", il, "'s KV cache is placed on the GPU, but no GPU backend is available"));
        // Program order: the disk schedule is built in the order forward() reads.
        for (auto [dst, src, suffix] : {std::tuple{&l.attn_q, &lw.attn_q, "attn_q.weight"},
                                        std::tuple{&l.attn_k, &lw.attn_k, "attn_k.weight"},
                                        std::tuple{&l.attn_v, &lw.attn_v, "attn_v.weight"},
                                        std::tuple{&l.attn_output, &lw.attn_output, "attn_output.weight"}}) {
            const std::string name = layer_name(il, suffix);
            *dst = place(*src, name, tier_of(name), tiers);
        }
        if (config.is_moe()) {
            place_moe(il, lw, tier_of, placement.experts_of(il), tiers, l.moe);
        } else {
            place_dense_ffn(il, lw, placement.ffn_split(il), tier_of, tiers, l);
        }
        bind_small_weights(l, lw);
        if (on_layer) on_layer(il + 1, config.n_layer);
    }
    finish_small_weights();
}

PlacedModel::PlacedModel(const Model& model, Backend& backend) : model_(model) {
    const ModelConfig& config = model.config();
    const ModelWeights& w = model.weights();
    const bool host = is_host(backend);
    const Tier tier = host ? Tier::Ram : Tier::Gpu;
    const TierBackends tiers{host ? &backend : nullptr, host ? nullptr : &backend};
    use_backend(&backend);
    token_embd_ = place(w.token_embd, "token_embd.weight", tier, tiers);
    output_ = config.tied_output ? token_embd_ : place(w.output, "output.weight", tier, tiers);
    output_norm_ = small(w.output_norm);
    if (present(w.rope_freqs)) rope_freqs_ = w.rope_freqs.as<const float>();
    layers_.resize(static_cast<size_t>(config.n_layer));
    for (int il = 0; il < config.n_layer; ++il) {
        const LayerWeights& lw = w.layers[static_cast<size_t>(il)];
        PlacedLayer& l = layers_[static_cast<size_t>(il)];
        l.attn_home = &backend;
        l.attn_q = place(lw.attn_q, layer_name(il, "attn_q.weight"), tier, tiers);
        l.attn_k = place(lw.attn_k, layer_name(il, "attn_k.weight"), tier, tiers);
        l.attn_v = place(lw.attn_v, layer_name(il, "attn_v.weight"), tier, tiers);
        l.attn_output = place(lw.attn_output, layer_name(il, "attn_output.weight"), tier, tiers);
        if (config.is_moe()) {
            place_moe(il, lw, [tier](const std::string&) { return tier; }, nullptr, tiers, l.moe);
        } else {
            FfnPart p{0, config.n_ff[static_cast<size_t>(il)], {}, {}, {}};
            p.gate = place(lw.ffn_gate, layer_name(il, "ffn_gate.weight"), tier, tiers);
            p.up = place(lw.ffn_up, layer_name(il, "ffn_up.weight"), tier, tiers);
            p.down = place(lw.ffn_down, layer_name(il, "ffn_down.weight"), tier, tiers);
            l.ffn.push_back(p);
        }
        bind_small_weights(l, lw);
    }
    finish_small_weights();
}

std::vector<Backend*> PlacedModel::kv_backends() const {
    std::vector<Backend*> out;
    for (const PlacedLayer& l : layers_) out.push_back(l.attn_home);
    return out;
}

uint64_t PlacedModel::register_ram_weights(Backend& gpu) {
    if (!registrations_.empty() || ram_ranges_.empty()) return stats_.registered_bytes;
    const auto t0 = std::chrono::steady_clock::now();
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    std::vector<std::pair<uintptr_t, uintptr_t>> runs;  // page-aligned [begin, end)
    for (const auto& [p, n] : ram_ranges_) {
        const auto b = reinterpret_cast<uintptr_t>(p) / page * page;
        const auto e = (reinterpret_cast<uintptr_t>(p) + n + page - 1) / page * page;
        runs.emplace_back(b, e);
    }
    std::sort(runs.begin(), runs.end());
    std::vector<std::pair<uintptr_t, uintptr_t>> merged;
    for (const auto& r : runs) {
        if (!merged.empty() && r.first <= merged.back().second) {
            merged.back().second = std::max(merged.back().second, r.second);
        } else {
            merged.push_back(r);
        }
    }
    for (const auto& [b, e] : merged) {
        Buffer handle = gpu.register_host_memory(reinterpret_cast<const void*>(b), e - b);
        if (!handle) continue;
        stats_.registered_bytes += handle.size();
        registrations_.push_back(std::move(handle));
    }
    stats_.register_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return stats_.registered_bytes;
}

}  // namespace strata
