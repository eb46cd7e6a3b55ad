// strata plan's summary: where each run of alike layers lives (attention, KV cache, FFN), its
// bytes and its share of the predicted time per token, as a table a person reads at a glance
// or as JSON (--json).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "offload/cost_model.h"
#include "offload/placement.h"

namespace strata::cli {

struct PlanRow {
    std::string layers;     // "0-5", "6", or "output" (embeddings, output matrix, final norm)
    int first = 0, last = 0;
    std::string attention;  // "GPU", "RAM", "DISK"
    std::string kv;
    std::string ffn;        // a tier, or "GPU 1536 / RAM 12288 neurons"
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes = 0;
    double time_share = -1;  // of the cost model's time per token; < 0: unknown (no profile)
};

// `cm` may be null (no hardware profile): the shares are then unknown.
std::vector<PlanRow> plan_rows(const Placement& p, const TensorTable& table, const CostModel* cm);

// To `out` (stdout for strata plan; bench -v writes it to stderr beside its accounting).
void print_plan_table(const std::vector<PlanRow>& rows, std::FILE* out = stdout);

// Weight and KV bytes per tier with the budgets, one line each.
void print_tier_table(const Placement& p, const TensorTable& table);

nlohmann::json plan_rows_json(const std::vector<PlanRow>& rows);

}  // namespace strata::cli
