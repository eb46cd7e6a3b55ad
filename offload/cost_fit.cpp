// Fitting the cost model's coefficients to measured decode runs (cost_model.h: fit): a weighted
// least squares over the runs' terms with a ridge toward the profile's values, every subset of
// coefficients tried so that none goes negative.
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
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
    const Vec prior{params.gpu_scale,       params.cpu_scale,       params.disk_scale,     params.overhead_s,
                    params.gpu_fixed_scale, params.cpu_fixed_scale, params.transfer_scale, params.graph_overhead_s};
    Vec current = prior;
    std::vector<bool> disk_bound(observations.size(), false);
    for (int iteration = 0; iteration < 16; ++iteration) {
        bool changed = iteration == 0;
        for (size_t i = 0; i < observations.size(); ++i) {
            const Observation& o = observations[i];
            const bool d = current[2] * o.disk_s > current[0] * o.gpu_s + current[1] * o.cpu_s +
                                                       current[4] * o.gpu_fixed_s + current[5] * o.cpu_fixed_s;
            changed |= d != disk_bound[i];
            disk_bound[i] = d;
        }
        if (!changed) break;
        // Weighted least squares on rows f_i / y_i against (y_i - T_i) / y_i (relative error).
        Mat a{};
        Vec b{};
        std::vector<std::pair<Vec, double>> rows;
        rows.reserve(observations.size());
        for (size_t i = 0; i < observations.size(); ++i) {
            const Observation& o = observations[i];
            const double w = 1.0 / o.measured_s_per_token;
            const double t = o.transfer_s * w;
            // One of the two overheads: the graph steps' or the others'.
            const double eager = o.graph ? 0 : w, graph = o.graph ? w : 0;
            const Vec f = disk_bound[i]
                              ? Vec{0, 0, o.disk_s * w, eager, 0, 0, t, graph}
                              : Vec{o.gpu_s * w, o.cpu_s * w, 0, eager, o.gpu_fixed_s * w, o.cpu_fixed_s * w, t, graph};
            const double y = o.measured_s_per_token * w;
            rows.emplace_back(f, y);
            for (int r = 0; r < kCoef; ++r) {
                for (int c = 0; c < kCoef; ++c) a[r][c] += f[r] * f[c];
                b[r] += f[r] * y;
            }
        }
        // The pull toward the prior: a coefficient moves only as far as the runs ask for.
        Vec ridge{};
        for (int j = 0; j < kCoef; ++j) {
            const double unit = std::max(std::abs(prior[static_cast<size_t>(j)]), kTypical[static_cast<size_t>(j)]);
            ridge[j] = prior_weight / (unit * unit) + 1e-6 * a[j][j] / static_cast<double>(rows.size()) + 1e-12;
            a[j][j] += ridge[j];
            b[j] += ridge[j] * prior[j];
        }
        // The sum of squared residuals plus the ridge, from the normal equations alone (x'Ax -
        // 2b'x + c): a fit costs O(runs), not O(runs x subsets), so leave-one-out stays cheap.
        double constant = 0;
        for (const auto& [f, y] : rows) constant += y * y;
        for (int j = 0; j < kCoef; ++j) constant += ridge[j] * prior[j] * prior[j];
        const auto objective = [&](const Vec& x) {
            double sum = constant;
            for (int r = 0; r < kCoef; ++r) {
                double ax = 0;
                for (int c = 0; c < kCoef; ++c) ax += a[r][c] * x[c];
                sum += x[r] * ax - 2 * b[r] * x[r];
            }
            return sum;
        };
        Vec best{};
        double best_obj = objective(best);
        for (unsigned mask = 1; mask < (1u << kCoef); ++mask) {
            Vec x;
            if (!solve_subset(a, b, mask, x)) continue;
            if (std::any_of(x.begin(), x.end(), [](double v) { return v < 0; })) continue;
            const double obj = objective(x);
            if (obj < best_obj) {
                best_obj = obj;
                best = x;
            }
        }
        current = best;
    }
    CostParams fitted = params;
    fitted.gpu_scale = current[0];
    fitted.cpu_scale = current[1];
    fitted.disk_scale = current[2];
    fitted.overhead_s = current[3];
    fitted.gpu_fixed_scale = current[4];
    fitted.cpu_fixed_scale = current[5];
    fitted.transfer_scale = current[6];
    fitted.graph_overhead_s = current[7];
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

}  // namespace strata
