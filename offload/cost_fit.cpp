// Fitting the cost model's coefficients to measured decode runs (cost_model.h: fit): a weighted
// least squares over the runs' terms with a ridge toward the profile's values, every subset of
// coefficients tried so that none goes negative; the runs' terms (observe) and what the fitted
// coefficients predict for them (predict_decode).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/core/error.h"
#include "offload/cost_model.h"

namespace strata {
namespace {

// gpu_scale, cpu_scale, disk_scale, overhead_s, gpu_fixed_scale, cpu_fixed_scale, transfer_scale,
// graph_overhead_s
constexpr int kCoef = 8;
using Vec = std::array<double, kCoef>;
// The size of a coefficient's typical change, for the pull toward the prior when it is 0.
constexpr Vec kTypical{1.0, 1.0, 1.0, 1e-3, 1.0, 1.0, 1.0, 1e-3};
using Mat = std::array<Vec, kCoef>;

// Solves A x = b for the variables in `mask` (others 0) by Gaussian elimination with partial
// pivoting; false when singular.
bool solve_subset(const Mat& a, const Vec& b, unsigned mask, Vec& x) {
    std::array<int, kCoef> vars{};
    int n = 0;
    for (int j = 0; j < kCoef; ++j) {
        if (mask & (1u << j)) vars[static_cast<size_t>(n++)] = j;
    }
    std::array<std::array<double, kCoef + 1>, kCoef> m{};
    for (int r = 0; r < n; ++r) {
        for (int c = 0; c < n; ++c) m[r][c] = a[vars[r]][vars[c]];
        m[r][n] = b[vars[r]];
    }
    for (int c = 0; c < n; ++c) {
        int pivot = c;
        for (int r = c + 1; r < n; ++r) {
            if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
        }
        if (std::abs(m[pivot][c]) < 1e-300) return false;
        std::swap(m[c], m[pivot]);
        for (int r = 0; r < n; ++r) {
            if (r == c) continue;
            const double f = m[r][c] / m[c][c];
            for (int k = c; k <= n; ++k) m[r][k] -= f * m[c][k];
        }
    }
    x = {};
    for (int r = 0; r < n; ++r) x[vars[r]] = m[r][n] / m[r][r];
    return true;
}

Vec coefficients(const CostParams& p) {
    return {p.gpu_scale,       p.cpu_scale,       p.disk_scale,     p.overhead_s,
            p.gpu_fixed_scale, p.cpu_fixed_scale, p.transfer_scale, p.graph_overhead_s};
}

CostParams with_coefficients(CostParams p, const Vec& x) {
    p.gpu_scale = x[0];
    p.cpu_scale = x[1];
    p.disk_scale = x[2];
    p.overhead_s = x[3];
    p.gpu_fixed_scale = x[4];
    p.cpu_fixed_scale = x[5];
    p.transfer_scale = x[6];
    p.graph_overhead_s = x[7];
    return p;
}

// Marks each run disk-bound or compute-bound under the coefficients x; true if any changed.
bool classify(const Vec& x, const std::vector<Observation>& observations, std::vector<bool>& disk_bound) {
    bool changed = false;
    for (size_t i = 0; i < observations.size(); ++i) {
        const Observation& o = observations[i];
        const bool d = x[2] * o.disk_s > x[0] * o.gpu_s + x[1] * o.cpu_s + x[4] * o.gpu_fixed_s + x[5] * o.cpu_fixed_s;
        changed |= d != disk_bound[i];
        disk_bound[i] = d;
    }
    return changed;
}

// The normal equations A x = b of the weighted least squares with the ridge, and the constant
// that makes x'Ax − 2b'x + c the sum of squared residuals plus the ridge.
struct NormalEquations {
    Mat a{};
    Vec b{};
    double constant = 0;

    double objective(const Vec& x) const {
        double sum = constant;
        for (int r = 0; r < kCoef; ++r) {
            double ax = 0;
            for (int c = 0; c < kCoef; ++c) ax += a[r][c] * x[c];
            sum += x[r] * ax - 2 * b[r] * x[r];
        }
        return sum;
    }
};

// Rows f_i / y_i against (y_i − T_i) / y_i (relative error), each run on its side; the pull
// toward the prior lets a coefficient move only as far as the runs ask for.
NormalEquations normal_equations(const std::vector<Observation>& observations, const std::vector<bool>& disk_bound,
                                 const Vec& prior, double prior_weight) {
    NormalEquations n;
    for (size_t i = 0; i < observations.size(); ++i) {
        const Observation& o = observations[i];
        const double w = 1.0 / o.measured_s_per_token;
        const double t = o.transfer_s * w;
        // One of the two overheads: the graph steps' or the others'.
        const double eager = o.graph ? 0 : w, graph = o.graph ? w : 0;
        const Vec f = disk_bound[i] ? Vec{0, 0, o.disk_s * w, eager, 0, 0, t, graph}
                                    : Vec{o.gpu_s * w, o.cpu_s * w, 0, eager, o.gpu_fixed_s * w, o.cpu_fixed_s * w, t, graph};
        const double y = o.measured_s_per_token * w;
        n.constant += y * y;
        for (int r = 0; r < kCoef; ++r) {
            for (int c = 0; c < kCoef; ++c) n.a[r][c] += f[r] * f[c];
            n.b[r] += f[r] * y;
        }
    }
    for (int j = 0; j < kCoef; ++j) {
        const double unit = std::max(std::abs(prior[static_cast<size_t>(j)]), kTypical[static_cast<size_t>(j)]);
        const double ridge =
            prior_weight / (unit * unit) + 1e-6 * n.a[j][j] / static_cast<double>(observations.size()) + 1e-12;
        n.a[j][j] += ridge;
        n.b[j] += ridge * prior[j];
        n.constant += ridge * prior[j] * prior[j];
    }
    return n;
}

// The non-negative solution with the least objective, over every subset of free coefficients
// (the others 0). The objective comes from the normal equations alone: a fit costs O(runs), not
// O(runs x subsets), so leave-one-out stays cheap.
Vec best_nonnegative(const NormalEquations& n) {
    Vec best{};
    double best_obj = n.objective(best);
    for (unsigned mask = 1; mask < (1u << kCoef); ++mask) {
        Vec x;
        if (!solve_subset(n.a, n.b, mask, x)) continue;
        if (std::any_of(x.begin(), x.end(), [](double v) { return v < 0; })) continue;
        const double obj = n.objective(x);
        if (obj < best_obj) {
            best_obj = obj;
            best = x;
        }
    }
    return best;
}

}  // namespace

bool fit(CostParams& params, const std::vector<Observation>& observations, double prior_weight) {
    if (observations.empty()) throw ArgumentError("cost model fit: no observations");
    for (const Observation& o : observations) {
        if (!(o.measured_s_per_token > 0)) {
            throw ArgumentError(cat("cost model fit: measured time ", o.measured_s_per_token,
                                    " s/token is not positive"));
        }
    }
    // measured = T + overhead + max(gs·G + cs·C, ds·D) is piecewise linear: each run is either
    // compute-bound or disk-bound. Alternate: classify every run with the current scales, fit
    // the linear model of its side, until the classes stop changing.
    const Vec prior = coefficients(params);
    Vec current = prior;
    std::vector<bool> disk_bound(observations.size(), false);
    for (int iteration = 0; iteration < 16; ++iteration) {
        const bool changed = classify(current, observations, disk_bound);
        if (!changed && iteration > 0) break;
        current = best_nonnegative(normal_equations(observations, disk_bound, prior, prior_weight));
    }
    const CostParams fitted = with_coefficients(params, current);
    // A degenerate set of runs (no terms, or terms that cannot explain the times) must not give
    // a model that predicts zero or infinite time.
    for (const Observation& o : observations) {
        const double t = predict_decode(fitted, o);
        if (!std::isfinite(t) || !(t > 0)) return false;
    }
    if (std::any_of(current.begin(), current.end(), [](double v) { return !std::isfinite(v); })) return false;
    params = fitted;
    return true;
}

CostEstimate estimate(const Placement& placement, const TensorTable& table,
                      const HardwareProfile& profile, const CostParams& params) {
    const CostModel model(table, profile, params, placement.kv_type);
    return model.estimate(model.layout_of(placement));
}

Observation observe(const Placement& placement, const TensorTable& table,
                    const HardwareProfile& profile, const CostParams& params,
                    double measured_s_per_token) {
    const CostModel model(table, profile, params, placement.kv_type);
    const CostTerms t = model.terms(model.layout_of(placement));
    Observation o{t.gpu_s, t.cpu_s, t.disk_s, t.transfer_s, measured_s_per_token};
    o.gpu_fixed_s = model.gpu_fixed_unit_s(t);
    o.cpu_fixed_s = t.cpu_fixed_s;
    o.graph = CostModel::is_graph(t);
    return o;
}

std::string describe_fit(const CostParams& c) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "overhead %.3f ms (graph steps %.3f ms), gpu x%.2f, cpu x%.2f, disk x%.2f, gpu fixed costs x%.2f,"
                  " cpu fixed costs x%.2f, transfers x%.2f",
                  c.overhead_s * 1e3, c.graph_overhead_s * 1e3, c.gpu_scale, c.cpu_scale, c.disk_scale,
                  c.gpu_fixed_scale, c.cpu_fixed_scale, c.transfer_scale);
    return buf;
}

double predict_decode(const CostParams& params, const Observation& o) {
    const double compute = params.gpu_scale * o.gpu_s + params.cpu_scale * o.cpu_s +
                           params.gpu_fixed_scale * o.gpu_fixed_s + params.cpu_fixed_scale * o.cpu_fixed_s;
    return (o.graph ? params.graph_overhead_s : params.overhead_s) + params.transfer_scale * o.transfer_s +
           std::max(compute, params.disk_scale * o.disk_s);
}

}  // namespace strata
