// The lattice search of the i-quant quantizers (iq_search.h): float tables of each lattice in
// structure-of-arrays form, nearest point by brute force (the compiler vectorises the loop over
// points), a float scale fit per unit, then the stored levels.
#include "quant/iq_search.h"

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "quant/half.h"
#include "quant/iq_grids.h"

namespace strata::iq {
namespace {

constexpr int kMaxPoints = 4096;
constexpr int kNumLattices = 8;

struct Table {
    int n = 0;
    int width = 0;
    std::vector<float> v;   // [width][n]: element j of point p at v[j * n + p]
    std::vector<float> n2;  // [n]: Σ_j v² of point p
    float vmax = 0.0f;      // largest |value|
};

template <class Value>
Table make_table(int n, int width, Value value) {
    Table t;
    t.n = n;
    t.width = width;
    t.v.resize(static_cast<size_t>(n * width));
    t.n2.assign(static_cast<size_t>(n), 0.0f);
    for (int p = 0; p < n; ++p) {
        for (int j = 0; j < width; ++j) {
            const float x = value(p, j);
            t.v[static_cast<size_t>(j * n + p)] = x;
            t.n2[static_cast<size_t>(p)] += x * x;
            t.vmax = std::max(t.vmax, std::fabs(x));
        }
    }
    return t;
}

float iq1_value(int p, int j, float delta) {
    return static_cast<float>(grid_i8(kIq1sGrid[p], j)) + delta;
}

Table build(Lattice id) {
    switch (id) {
        case Lattice::Iq2xxs: return make_table(256, 8, [](int p, int j) { return float(grid_u8(kIq2xxsGrid[p], j)); });
        case Lattice::Iq2xs: return make_table(512, 8, [](int p, int j) { return float(grid_u8(kIq2xsGrid[p], j)); });
        case Lattice::Iq2s: return make_table(1024, 8, [](int p, int j) { return float(grid_u8(kIq2sGrid[p], j)); });
        case Lattice::Iq3xxs: return make_table(256, 4, [](int p, int j) { return float(grid_u8(kIq3xxsGrid[p], j)); });
        case Lattice::Iq3s: return make_table(512, 4, [](int p, int j) { return float(grid_u8(kIq3sGrid[p], j)); });
        case Lattice::Iq1sPlus: return make_table(2048, 8, [](int p, int j) { return iq1_value(p, j, kIq1Delta); });
        case Lattice::Iq1sMinus: return make_table(2048, 8, [](int p, int j) { return iq1_value(p, j, -kIq1Delta); });
        case Lattice::Iq1mBoth:
            return make_table(4096, 8, [](int p, int j) {
                return p < 2048 ? iq1_value(p, j, kIq1Delta) : iq1_value(p - 2048, j, -kIq1Delta);
            });
    }
    return {};
}

const Table& table(Lattice id) {
    static const std::array<Table, kNumLattices> tables = [] {
        std::array<Table, kNumLattices> t;
        for (int i = 0; i < kNumLattices; ++i) t[static_cast<size_t>(i)] = build(static_cast<Lattice>(i));
        return t;
    }();
    return tables[static_cast<size_t>(id)];
}

// The point nearest to the `width` targets at t for scale s; its squared error in *err.
int nearest(const Table& g, const float* t, float s, float* err) {
    float dot[kMaxPoints];
    for (int p = 0; p < g.n; ++p) dot[p] = 0.0f;
    float t2 = 0.0f;
    for (int j = 0; j < g.width; ++j) {
        const float tj = t[j];
        const float* vj = g.v.data() + static_cast<size_t>(j) * g.n;
        for (int p = 0; p < g.n; ++p) dot[p] += tj * vj[p];
        t2 += tj * tj;
    }
    int best = 0;
    float best_e = std::numeric_limits<float>::infinity();
    for (int p = 0; p < g.n; ++p) {
        const float e = s * (s * g.n2[static_cast<size_t>(p)] - 2.0f * dot[p]);  // error − Σt²
        if (e < best_e) {
            best_e = e;
            best = p;
        }
    }
    *err = best_e + t2;
    return best;
}

// Nearest points for the n_points points of a unit at scale s; the unit's squared error.
float assign(const Table& g, const float* t, int n_points, float s, uint16_t* idx) {
    float sse = 0.0f;
    for (int i = 0; i < n_points; ++i) {
        float e = 0.0f;
        idx[i] = static_cast<uint16_t>(nearest(g, t + i * g.width, s, &e));
        sse += e;
    }
    return sse;
}

// The float scale of a unit: a few starts around amax/vmax, each refitted by least squares on
// its assignment once; the one with the least error (in *err).
float fit_scale(const Table& g, const float* t, int n_points, float* err) {
    float amax = 0.0f;
    for (int i = 0; i < n_points * g.width; ++i) amax = std::max(amax, std::fabs(t[i]));
    *err = std::numeric_limits<float>::infinity();
    if (!(amax > 0.0f) || !std::isfinite(amax)) return 0.0f;
    float best = amax / g.vmax;
    uint16_t idx[8];
    for (float f : {0.6f, 0.8f, 1.0f, 1.25f}) {
        float s = f * amax / g.vmax;
        for (int iter = 0; iter < 2; ++iter) {
            const float e = assign(g, t, n_points, s, idx);
            if (e < *err) {
                *err = e;
                best = s;
            }
            double num = 0.0, den = 0.0;
            for (int i = 0; i < n_points; ++i) {
                for (int j = 0; j < g.width; ++j) {
                    const double v = g.v[static_cast<size_t>(j) * g.n + idx[i]];
                    num += v * t[i * g.width + j];
                    den += v * v;
                }
            }
            if (!(num > 0.0 && den > 0.0)) break;
            s = static_cast<float>(num / den);
        }
    }
    return best;
}

// Folds the signs of each group of 8 into the targets (t = sign·x ≥ 0, except the element a
// parity rule flips: the smallest |x| of the group).
void fold_signs(SignRule rule, const float* x, float* t, uint8_t* signs) {
    for (int g = 0; g < 32; ++g) {
        uint32_t neg = 0;
        int smallest = 0;
        for (int j = 0; j < 8; ++j) {
            const float v = x[8 * g + j];
            if (std::signbit(v) && rule != SignRule::None) neg |= 1u << j;
            t[8 * g + j] = rule == SignRule::None ? v : std::fabs(v);
            if (std::fabs(v) < std::fabs(x[8 * g + smallest])) smallest = j;
        }
        if (rule == SignRule::Parity7 && (std::popcount(neg) & 1)) {
            neg ^= 1u << smallest;
            t[8 * g + smallest] = -t[8 * g + smallest];
        }
        signs[g] = static_cast<uint8_t>(neg);
    }
}

}  // namespace

void choose_block(const Format& f, const float* x, BlockChoice& out) {
    out = BlockChoice{};
    float t[256];
    fold_signs(f.signs, x, t, out.signs);
    const int n_units = 256 / f.unit, pts = f.unit / f.width;
    float s_unit[16];
    float smax = 0.0f;
    for (int u = 0; u < n_units; ++u) {
        float best_err = std::numeric_limits<float>::infinity();
        s_unit[u] = 0.0f;
        for (int o = 0; o < f.n_options; ++o) {
            float err = 0.0f;
            const float s = fit_scale(table(f.options[o]), t + u * f.unit, pts, &err);
            if (err < best_err) {
                best_err = err;
                s_unit[u] = s;
            }
        }
        smax = std::max(smax, s_unit[u]);
    }
    const float d = smax / f.unit_scale(1.0f, f.n_levels - 1);
    const uint16_t d16 = fp32_to_fp16(d);
    const float df = fp16_to_fp32(d16);
    if (!(df > 0.0f) || !std::isfinite(df)) return;  // zero block (d16 = 0)
    out.d16 = d16;
    for (int u = 0; u < n_units; ++u) {
        int l0 = 0;
        for (int l = 1; l < f.n_levels; ++l) {
            if (std::fabs(f.unit_scale(df, l) - s_unit[u]) < std::fabs(f.unit_scale(df, l0) - s_unit[u])) l0 = l;
        }
        float best_err = std::numeric_limits<float>::infinity();
        bool taken = false;  // the first candidate is kept even if its error is NaN
        for (int l = std::max(0, l0 - 1); l <= std::min(f.n_levels - 1, l0 + 1); ++l) {
            for (int o = 0; o < f.n_options; ++o) {
                uint16_t idx[8];
                const float err = assign(table(f.options[o]), t + u * f.unit, pts, f.unit_scale(df, l), idx);
                if (err < best_err || !taken) {
                    taken = true;
                    best_err = err;
                    out.level[u] = static_cast<uint8_t>(l);
                    out.option[u] = static_cast<uint8_t>(o);
                    for (int i = 0; i < pts; ++i) out.point[u * pts + i] = idx[i];
                }
            }
        }
    }
}

}  // namespace strata::iq
