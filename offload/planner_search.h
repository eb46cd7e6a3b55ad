// The planner's search (planner.h states it), shared by its files: planner.cpp (budgets, usage,
// the choice between candidates), planner_moves.cpp (the greedy's moves) and planner_greedy.cpp
// (the greedy and the other candidates). Private to offload/.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "offload/cost_model.h"
#include "offload/placement_rules.h"
#include "offload/planner.h"

namespace strata::planner_detail {

// Signed byte counts per tier: the change a move makes.
struct Usage {
    int64_t gpu = 0, ram = 0, disk = 0;
    Usage operator-(const Usage& o) const { return {gpu - o.gpu, ram - o.ram, disk - o.disk}; }
    Usage& operator+=(const Usage& o) {
        gpu += o.gpu;
        ram += o.ram;
        disk += o.disk;
        return *this;
    }
    void add(Tier tier, uint64_t bytes) {
        const auto b = static_cast<int64_t>(bytes);
        (tier == Tier::Gpu ? gpu : tier == Tier::Ram ? ram : disk) += b;
    }
};

// A move towards the GPU: whole tensors, a layer's KV, a layer's FFN up to ffn_gpu_end.
struct Move {
    std::vector<int> tensors;
    int kv_layer = -1;
    int ffn_layer = -1;
    int64_t ffn_gpu_end = 0;  // n_ff: the whole FFN
    int expert_layer = -1;    // the next n_experts most used experts of this layer off the GPU
    int64_t n_experts = 0;
};

// One way of ranking the greedy's moves; the planner runs each and keeps the best result, as
// ranking by seconds per byte alone packs the GPU badly when items are few and large.
struct GreedyMode {
    bool per_byte = true;   // rank by seconds saved per GPU byte, else by seconds saved
    bool fractions = true;  // offer FFN shares of k/8 of n_ff, else whole FFNs (and what fits)
};

struct Saved {
    std::vector<Tier> tiers;
    Tier kv = Tier::Ram;
    std::optional<FfnSplit> split;
    std::array<Tier, 3> ffn{};
    std::vector<Tier> experts;
};

inline bool must_stay(TensorClass role) {
    return role == TensorClass::Small || role == TensorClass::TokenEmbd ||
           role == TensorClass::Output || role == TensorClass::GlobalOther;
}

class Planner {
  public:
    Planner(const TensorTable& table, const HardwareProfile& profile, const PlannerParams& params);
    Placement run(PlanReport* report);

  private:
    // ---- budgets, usage and the objective (planner.cpp) ----
    void check_budgets(const HardwareProfile& profile);
    Usage ffn_usage(const Layout& l, int layer) const;
    bool in_split(const Layout& l, int i) const;
    // Tensor i is a *_exps tensor of a layer whose experts are placed one by one.
    bool in_experts(const Layout& l, int i) const;
    Usage experts_usage(const Layout& l, int layer) const;
    Usage usage(const Layout& l) const;
    Usage touched_usage(const Layout& l, const Move& m) const;
    // The objective after RAM left free takes back as many DISK bytes (the refill that
    // follows every committed move, approximated).
    double objective_with_refill(CostTerms t, int64_t ram_used, int64_t disk_bytes) const;
    double objective(const CostEstimate& e) const;

    // ---- moves (planner_moves.cpp) ----
    Saved apply(Layout& l, const Move& m) const;
    // The layer's experts one by one (entering that mode, each expert on the slowest tier of
    // the layer's three *_exps tensors), then its next m.n_experts most used ones on the GPU.
    void apply_experts(Layout& l, const Move& m, Saved& s) const;
    void revert(Layout& l, const Move& m, const Saved& s) const;
    std::vector<int> affected(const Move& m) const;
    std::vector<Move> candidates(const Layout& l, bool deficit, GreedyMode mode) const;
    // The FFN's GPU share grown to k/8 of n_ff (k = 1..8) and to as many granules as fit.
    void add_ffn_moves(const Layout& l, int layer, const FfnTensors& f, bool fractions, std::vector<Move>& out) const;
    // The layer's next most used experts to the GPU: a step of n_expert/16 (at least one), as
    // many as fit, or (whole-FFN mode) all the rest.
    void add_expert_moves(const Layout& l, int layer, bool fractions, std::vector<Move>& out) const;

    // ---- the candidate layouts (planner_greedy.cpp) ----
    // Must-stay tensors and the KV in RAM; the rest in RAM in file order while it fits, else DISK.
    Layout initial() const;
    // DISK tensors to RAM in file order while they fit.
    void refill(Layout& l, Usage use) const;
    Layout plan_greedy(GreedyMode mode);
    // Layers 0..k-1 whole on the GPU (k = n_layer + 1: and the output matrix), the rest as
    // initial(); the fastest k that fits.
    std::optional<Layout> plan_whole_layers(int& best_k) const;
    // The built-in placement, when the executor can run it (its output matrix never on DISK).
    std::optional<Layout> plan_builtin() const;

    const TensorTable& table_;
    const PlannerParams& params_;
    CostModel cm_;
    ResolvedRules pins_;
    std::vector<uint64_t> kv_bytes_;
    std::vector<std::vector<int>> layer_tensors_;
    std::vector<std::vector<int>> expert_order_;  // per layer: experts by expected use, most first
    uint64_t gpu_cap_ = 0;
    uint64_t ram_cap_ = 0;
    int64_t gpu_used_ = 0;
    std::string profile_gpu_name_, profile_cpu_name_;
    uint64_t profile_gpu_bytes_ = 0, profile_ram_bytes_ = 0;
    int profile_threads_ = 0;
};

}  // namespace strata::planner_detail
