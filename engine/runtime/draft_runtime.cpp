// Loading a target and its draft through one set of budgets (draft_runtime.h).
#include "engine/runtime/draft_runtime.h"

#include <algorithm>

#include "backends/builtin_backends.h"
#include "engine/core/error.h"
#include "engine/core/byte_size.h"
#include "engine/runtime/draft_model.h"
#include "engine/runtime/model_placement.h"

namespace strata {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBackendMargin = 256 * kMiB;

// Whether a Runtime made with `gpu` (parse_gpu_choice's spelling) gets a GPU backend.
bool gets_gpu(const std::string& gpu) {
    const std::string choice = parse_gpu_choice(gpu);
    if (choice == "none") return false;
    if (choice != "auto") return true;
    for (const BackendEntry& e : builtin_backends().entries()) {
        if (e.is_device && e.auto_choice && (!e.unavailable || e.unavailable().empty())) return true;
    }
    return false;
}

int64_t context_cells(const Model& m, const SessionParams& s) {
    return session_context(m.config(), s);
}

}  // namespace

uint64_t draft_gpu_need(const Model& draft, const SessionParams& session) {
    const TensorTable table = tensor_table(draft);
    uint64_t bytes = 0;
    for (const TensorEntry& t : table.tensors) bytes += t.bytes;
    const int64_t cells = context_cells(draft, session);
    for (int il = 0; il < table.n_layer; ++il) bytes += kv_bytes_per_layer(table, il, cells, session.kv_type);
    const ModelConfig& c = draft.config();
    const int64_t n_ff = *std::max_element(c.n_ff.begin(), c.n_ff.end());
    const auto per_token = static_cast<uint64_t>(12 * c.n_embd + 4 * n_ff + draft.weights().output.ne[1]) * sizeof(float);
    return bytes + static_cast<uint64_t>(session.n_batch) * per_token + kBackendMargin;
}

uint64_t draft_gpu_share(uint64_t gpu_mem, uint64_t need) {
    if (gpu_mem == 0) return need;
    if (gpu_mem / 2 < kBackendMargin) {
        throw BudgetError(cat("--gpu-mem ", format_bytes(gpu_mem), " cannot hold a draft model and the target: the draft "
                              "takes up to half, and half is below ", format_bytes(kBackendMargin),
                              " (raise --gpu-mem, or --gpu none)"));
    }
    return std::min(need, gpu_mem / 2);
}

uint64_t runtime_ram_bytes(const Runtime& runtime) {
    const Placement& p = runtime.placement();
    const TensorTable table = tensor_table(runtime.model());
    uint64_t bytes = runtime.placed().stats().ram_weight_bytes;
    if (runtime.placed().disk_stream() != nullptr) bytes += runtime.placed().disk_stream()->staging_bytes();
    for (int il = 0; il < table.n_layer; ++il) {
        if (p.kv[static_cast<size_t>(il)] != Tier::Gpu) bytes += kv_bytes_per_layer(table, il, p.n_ctx, p.kv_type);
    }
    return bytes;
}

LoadedPair load_target_and_draft(const std::string& target_path, const RuntimeOptions& options, const DraftLoad& draft) {
    LoadedPair pair;
    {  // Refused before any weight is read; the Models are opened again by the runtimes.
        const Model target_probe(target_path), draft_probe(draft.path);
        check_draft_vocabulary(target_probe, target_path, draft_probe, draft.path);
    }
    const bool gpu = gets_gpu(options.gpu);
    RuntimeOptions d = options;
    d.plan_path.clear();  // a placement file is the target's
    d.placer = Placer::Plan;
    d.rules = PlacementRules{};
    d.rules.gpu_layers = draft.gpu_layers;
    d.sparsity = SparsityOptions{};
    d.session.n_sequences = 1;
    d.session.sparse = nullptr;
    d.progress = nullptr;
    uint64_t gpu_share = 0;
    if (gpu) {
        const Model probe(draft.path);
        gpu_share = draft_gpu_share(options.gpu_mem, draft_gpu_need(probe, options.session));
        d.gpu_mem = gpu_share;
    }
    if (options.ram_mem > 0) d.ram_mem = options.ram_mem / 2;
    pair.draft = std::make_unique<Runtime>(draft.path, d);

    RuntimeOptions t = options;
    if (gpu && options.gpu_mem > 0) t.gpu_mem = options.gpu_mem - gpu_share;
    if (options.ram_mem > 0) {
        const uint64_t held = runtime_ram_bytes(*pair.draft);
        if (held >= options.ram_mem) {
            throw BudgetError(cat("the draft model '", draft.path, "' holds ", format_bytes(held),
                                  " of RAM, all of --ram-mem ", format_bytes(options.ram_mem), ": nothing is left for the target"));
        }
        t.ram_mem = options.ram_mem - held;
    }
    pair.target = std::make_unique<Runtime>(target_path, t);
    return pair;
}

}  // namespace strata
