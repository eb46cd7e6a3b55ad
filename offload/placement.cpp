// Placement look-ups, and a placement checked and measured against a model's tensor table
// (placement.h).
#include "offload/placement.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "engine/core/error.h"

namespace strata {

std::optional<Tier> Placement::tier_of(const std::string& name) const {
    for (const TensorPlacement& t : tensors) {
        if (t.name == name) return t.tier;
    }
    return std::nullopt;
}

const FfnSplit* Placement::ffn_split(int layer) const {
    for (const FfnSplit& s : ffn_splits) {
        if (s.layer == layer) return &s;
    }
    return nullptr;
}

const ExpertTiers* Placement::experts_of(int layer) const {
    for (const ExpertTiers& e : expert_tiers) {
        if (e.layer == layer) return &e;
    }
    return nullptr;
}

namespace {

const TensorEntry* find_tensor(const TensorTable& table, const std::string& name) {
    for (const TensorEntry& t : table.tensors) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

// The tensor of `layer` with `role`, or null.
const TensorEntry* find_tensor(const TensorTable& table, int layer, TensorRole role) {
    const std::string prefix = cat("blk.", layer, ".");  // only the layer's own names are read
    for (const TensorEntry& t : table.tensors) {
        if (t.name.starts_with(prefix) && tensor_name_info(t.name).role == role) return &t;
    }
    return nullptr;
}

}  // namespace

std::optional<FfnTensors> find_ffn_tensors(const TensorTable& table, int layer) {
    FfnTensors f;
    f.gate = find_tensor(table, layer, TensorRole::FfnGate);
    f.up = find_tensor(table, layer, TensorRole::FfnUp);
    f.down = find_tensor(table, layer, TensorRole::FfnDown);
    if (!f.gate || !f.up || !f.down) return std::nullopt;
    f.n_ff = f.gate->ne[1];
    const int64_t n_embd = f.gate->ne[0];
    const bool shapes_agree = f.up->ne[0] == n_embd && f.up->ne[1] == f.n_ff &&
                              f.down->ne[0] == f.n_ff && f.down->ne[1] == n_embd;
    for (const TensorEntry* t : {f.gate, f.up, f.down}) {
        if (t->ne[2] != 1 || t->ne[3] != 1) return std::nullopt;
    }
    if (!shapes_agree || f.n_ff <= 0) return std::nullopt;
    f.granule =
        std::lcm(std::lcm(type_traits(f.gate->type).block_size, type_traits(f.up->type).block_size),
                 type_traits(f.down->type).block_size);
    return f;
}

uint64_t ffn_slice_bytes(const FfnTensors& ffn, int64_t begin, int64_t end) {
    STRATA_INVARIANT(0 <= begin && begin <= end && end <= ffn.n_ff);
    const auto n = static_cast<uint64_t>(end - begin);
    // gate/up: whole rows per neuron; down: a column slice of each of its n_embd rows.
    return n * row_bytes(ffn.gate->type, ffn.gate->ne[0]) +
           n * row_bytes(ffn.up->type, ffn.up->ne[0]) +
           row_bytes(ffn.down->type, end - begin) * static_cast<uint64_t>(ffn.down->ne[1]);
}

int64_t kv_layer_cells(int64_t window, int64_t n_ctx, int64_t ring_slack) {
    if (window <= 0) return n_ctx;
    return std::min(n_ctx, window + std::max<int64_t>(ring_slack, 1));
}

std::optional<ExpertTensors> find_expert_tensors(const TensorTable& table, int layer) {
    ExpertTensors x;
    x.gate = find_tensor(table, layer, TensorRole::FfnGateExps);
    x.up = find_tensor(table, layer, TensorRole::FfnUpExps);
    x.down = find_tensor(table, layer, TensorRole::FfnDownExps);
    if (!x.gate || !x.up || !x.down) return std::nullopt;
    x.n_expert = x.gate->ne[2];
    if (x.n_expert < 1 || x.up->ne[2] != x.n_expert || x.down->ne[2] != x.n_expert) return std::nullopt;
    const auto n = static_cast<uint64_t>(x.n_expert);
    x.bytes_per_expert = x.gate->bytes / n + x.up->bytes / n + x.down->bytes / n;
    return x;
}

std::vector<double> expert_use_of(const TensorTable& table, int layer, int64_t n_expert) {
    const auto l = static_cast<size_t>(layer);
    if (l < table.expert_use.size() && table.expert_use[l].size() == static_cast<size_t>(n_expert)) {
        return table.expert_use[l];
    }
    const double k = table.n_expert_used > 0 ? table.n_expert_used : static_cast<double>(n_expert);
    return std::vector<double>(static_cast<size_t>(n_expert), std::min(1.0, k / static_cast<double>(n_expert)));
}

std::optional<std::pair<int64_t, int64_t>> kv_row_widths(const TensorTable& table, int layer) {
    const TensorEntry* k = find_tensor(table, layer, TensorRole::AttnK);
    const TensorEntry* v = find_tensor(table, layer, TensorRole::AttnV);
    if (k && v) return std::pair{k->ne[1], v->ne[1]};
    const TensorEntry* qkv = find_tensor(table, layer, TensorRole::AttnQkv);
    const int64_t kv = static_cast<int64_t>(table.n_head_kv) * table.head_dim;
    if (qkv && kv > 0 && qkv->ne[1] == static_cast<int64_t>(table.n_head) * table.head_dim + 2 * kv) {
        return std::pair{kv, kv};
    }
    return std::nullopt;
}

uint64_t kv_bytes_per_layer(const TensorTable& table, int layer, int64_t n_ctx, GgmlType kv_type) {
    const auto widths = kv_row_widths(table, layer);
    if (!widths) {
        throw ArgumentError(cat("cannot size the KV cache of layer ", layer, ": the model has no blk.", layer,
                                ".attn_k/attn_v weights nor an attn_qkv of (n_head + 2*n_head_kv)*head_dim rows"));
    }
    int64_t n_cells = n_ctx;
    const auto il = static_cast<size_t>(layer);
    if (il < table.attn_window.size() && table.attn_window[il] > 0) {
        // n_ctx spans kv_sequences sequences; each keeps its own ring.
        const int64_t seqs = std::max<int64_t>(1, table.kv_sequences);
        n_cells = std::min(n_ctx, seqs * kv_layer_cells(table.attn_window[il], (n_ctx + seqs - 1) / seqs,
                                                          table.kv_ring_slack));
    }
    const auto cells = static_cast<uint64_t>(n_cells);
    return (row_bytes(kv_type, widths->first) + row_bytes(kv_type, widths->second)) * cells;
}

TierBytes placement_bytes(const Placement& placement, const TensorTable& table) {
    TierBytes bytes;
    auto add = [&](Tier tier, uint64_t n) {
        (tier == Tier::Gpu ? bytes.gpu : tier == Tier::Ram ? bytes.ram : bytes.disk) += n;
    };
    for (const TensorPlacement& t : placement.tensors) {
        const TensorEntry* entry = find_tensor(table, t.name);
        if (!entry) throw FormatError(cat("placement names unknown tensor '", t.name, "'"));
        add(t.tier, entry->bytes);
    }
    for (const FfnSplit& s : placement.ffn_splits) {
        const auto ffn = find_ffn_tensors(table, s.layer);
        if (!ffn) throw FormatError(cat("placement splits layer ", s.layer, ", which has no FFN"));
        add(Tier::Gpu, ffn_slice_bytes(*ffn, 0, s.gpu_end));
        add(Tier::Ram, ffn_slice_bytes(*ffn, s.gpu_end, s.ram_end));
        add(Tier::Disk, ffn_slice_bytes(*ffn, s.ram_end, ffn->n_ff));
    }
    for (const ExpertTiers& x : placement.expert_tiers) {
        const auto ex = find_expert_tensors(table, x.layer);
        if (!ex) throw FormatError(cat("placement places experts of layer ", x.layer, ", which has none"));
        for (Tier t : x.tiers) add(t, ex->bytes_per_expert);
    }
    return bytes;
}

namespace {

void check_split(const FfnSplit& s, const FfnTensors& ffn) {
    const auto where = [&] { return cat("ffn split of layer ", s.layer, ": "); };
    if (!(0 <= s.gpu_end && s.gpu_end <= s.ram_end && s.ram_end <= ffn.n_ff)) {
        throw FormatError(cat(where(), "gpu_end ", s.gpu_end, ", ram_end ", s.ram_end,
                              " must satisfy 0 <= gpu_end <= ram_end <= n_ff = ", ffn.n_ff));
    }
    for (int64_t bound : {s.gpu_end, s.ram_end}) {
        if (bound % ffn.granule != 0 && bound != ffn.n_ff) {
            throw FormatError(cat(where(), "boundary ", bound, " is not a multiple of ",
                                  ffn.granule, " (the block size of ",
                                  type_traits(ffn.gate->type).name, "/",
                                  type_traits(ffn.up->type).name, "/",
                                  type_traits(ffn.down->type).name, ") nor n_ff = ", ffn.n_ff));
        }
    }
}

// Marks each expert layer's three *_exps tensors in `placed`.
void check_expert_tiers(const Placement& placement, const TensorTable& table, std::vector<int>& placed) {
    std::vector<bool> seen(static_cast<size_t>(table.n_layer), false);
    for (const ExpertTiers& x : placement.expert_tiers) {
        if (x.layer < 0 || x.layer >= table.n_layer) {
            throw FormatError(cat("expert tiers for layer ", x.layer, "; the model has layers 0..", table.n_layer - 1));
        }
        if (seen[static_cast<size_t>(x.layer)]) throw FormatError(cat("two expert tier lists for layer ", x.layer));
        seen[static_cast<size_t>(x.layer)] = true;
        const auto ex = find_expert_tensors(table, x.layer);
        if (!ex) {
            throw FormatError(cat("expert tiers for layer ", x.layer,
                                  ", which has no ffn_gate_exps/ffn_up_exps/ffn_down_exps of one expert count"));
        }
        if (x.tiers.size() != static_cast<size_t>(ex->n_expert)) {
            throw FormatError(cat("expert tiers for layer ", x.layer, " name ", x.tiers.size(),
                                  " experts; the layer has ", ex->n_expert));
        }
        for (const TensorEntry* t : {ex->gate, ex->up, ex->down}) {
            if (placed[static_cast<size_t>(t - table.tensors.data())]++ > 0) {
                throw FormatError(cat("layer ", x.layer, "'s experts are placed one by one, but '", t->name,
                                      "' is also listed whole"));
            }
        }
    }
}

}  // namespace

void check_placement(const Placement& placement, const TensorTable& table,
                     const ModelFingerprint& actual) {
    if (placement.model != actual) {
        throw FormatError(cat("the placement was made for another model file (",
                              placement.model.file_bytes, " bytes, header hash '",
                              placement.model.header_hash, "'); this model has ", actual.file_bytes,
                              " bytes, header hash '", actual.header_hash,
                              "': make a new placement for this model"));
    }
    if (placement.kv.size() != static_cast<size_t>(table.n_layer)) {
        throw FormatError(cat("placement has ", placement.kv.size(), " kv entries; the model has ",
                              table.n_layer, " layers"));
    }
    for (size_t i = 0; i < placement.kv.size(); ++i) {
        if (placement.kv[i] == Tier::Disk) {
            throw FormatError(cat("placement puts the KV cache of layer ", i,
                                  " on disk; it must be on gpu or ram"));
        }
    }

    std::unordered_map<std::string, size_t> index;
    for (size_t i = 0; i < table.tensors.size(); ++i)
        index.emplace(table.tensors[i].name, i);
    std::vector<int> placed(table.tensors.size(), 0);
    for (const TensorPlacement& t : placement.tensors) {
        const auto it = index.find(t.name);
        if (it == index.end()) {
            throw FormatError(
                cat("placement lists tensor '", t.name, "', which this model does not have"));
        }
        if (placed[it->second]++ > 0) {
            throw FormatError(cat("placement lists tensor '", t.name, "' twice"));
        }
    }

    std::vector<bool> split_seen(static_cast<size_t>(table.n_layer), false);
    for (const FfnSplit& s : placement.ffn_splits) {
        if (s.layer < 0 || s.layer >= table.n_layer) {
            throw FormatError(cat("ffn split for layer ", s.layer, "; the model has layers 0..",
                                  table.n_layer - 1));
        }
        if (split_seen[static_cast<size_t>(s.layer)]) {
            throw FormatError(cat("two ffn splits for layer ", s.layer));
        }
        split_seen[static_cast<size_t>(s.layer)] = true;
        const auto ffn = find_ffn_tensors(table, s.layer);
        if (!ffn) {
            throw FormatError(cat("ffn split for layer ", s.layer,
                                  ", which has no splittable ffn_gate/ffn_up/ffn_down"));
        }
        for (const TensorEntry* t : {ffn->gate, ffn->up, ffn->down}) {
            const auto i = static_cast<size_t>(t - table.tensors.data());
            if (placed[i]++ > 0) {
                throw FormatError(cat("layer ", s.layer, "'s FFN is split, but '", t->name,
                                      "' is also listed whole"));
            }
        }
        check_split(s, *ffn);
    }

    check_expert_tiers(placement, table, placed);

    std::string missing;
    size_t n_missing = 0;
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        if (placed[i] != 0) continue;
        if (n_missing++ < 5) missing += cat(n_missing > 1 ? ", " : "", table.tensors[i].name);
    }
    if (n_missing > 0) {
        throw FormatError(cat("placement does not place ", n_missing,
                              " tensor(s) of the model: ", missing, n_missing > 5 ? ", ..." : ""));
    }
}

}  // namespace strata
