// Tensor table and fingerprint of a loaded model (model_placement.h).
#include "engine/runtime/model_placement.h"

#include <string>
#include <vector>

#include "engine/runtime/model.h"
#include "offload/fingerprint.h"

namespace strata {

TensorTable tensor_table(const Model& model, int64_t kv_ring_slack, int64_t kv_sequences) {
    TensorTable table;
    table.n_layer = static_cast<int>(model.config().n_layer);
    table.architecture = model.file().architecture();
    const ModelConfig& c = model.config();
    if (c.n_layer > 0) {
        table.n_head = static_cast<int>(c.n_head[0]);
        table.n_head_kv = static_cast<int>(c.n_head_kv[0]);
        table.head_dim = static_cast<int>(c.head_dim_k);
    }
    table.n_expert_used = static_cast<int>(c.moe.n_expert_used);
    if (c.sliding_window > 0) {
        for (int64_t il = 0; il < c.n_layer; ++il)
            table.attn_window.push_back(c.is_swa.at(static_cast<size_t>(il)) ? c.sliding_window : 0);
    }
    table.kv_ring_slack = kv_ring_slack;
    table.kv_sequences = kv_sequences;
    for (const TensorInfo& info : model.file().tensors()) {
        table.tensors.push_back({info.name, info.type, info.ne, info.n_bytes});
    }
    return table;
}

ModelFingerprint model_fingerprint(const Model& model) {
    std::vector<std::string> paths;
    for (int i = 0; i < model.file().n_shards(); ++i) paths.push_back(model.file().shard(i).path());
    return fingerprint_file(paths);
}

void check_placement_for(const Placement& placement, const Model& model) {
    check_placement(placement, tensor_table(model), model_fingerprint(model));
}

}  // namespace strata
