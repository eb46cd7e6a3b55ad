// moe_plan_helper.h
#include "tests/engine/runtime/moe_plan_helper.h"

#include "offload/planner.h"

namespace strata::test {

Placement plan_moe_for_test(const TensorTable& table, const Budgets& budgets) {
    HardwareProfile hw;
    hw.cpu_name = "test cpu";
    hw.host_read_gbs = 20;
    hw.cpu_gemv_gbs = {{"q8_0", 10}, {"f32", 5}, {"f16", 8}};
    hw.gpu_name = "test gpu";
    hw.gpu_read_gbs = 500;
    hw.gpu_gemv_gbs = {{"q8_0", 400}, {"f32", 300}, {"f16", 350}};
    hw.h2d_gbs = hw.d2h_gbs = 1e6;
    PlannerParams params;
    params.n_ctx = 64;
    params.budgets = budgets;
    return plan_placement(table, hw, params);
}

}  // namespace strata::test
