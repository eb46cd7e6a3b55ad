// Evaluation of the trained FFN activity predictors (ffn_predictor.h), with Eigen.
#include "predictor/ffn_predictor.h"

#include <Eigen/Dense>

#include <algorithm>

#include "engine/core/error.h"

namespace strata {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf>;

}  // namespace

void LayerPredictor::check_shapes(const std::string& what) const {
    const auto size = [](int64_t a, int64_t b) { return static_cast<size_t>(a) * static_cast<size_t>(b); };
    if (n_embd <= 0 || n_ff <= 0 || rank <= 0 || w1.size() != size(rank, n_embd) || b1.size() != static_cast<size_t>(rank) ||
        w2.size() != size(n_ff, rank) || b2.size() != static_cast<size_t>(n_ff)) {
        throw FormatError(cat(what, ": a predictor of n_embd ", n_embd, ", n_ff ", n_ff, ", rank ", rank, " has arrays of ",
                              w1.size(), ", ", b1.size(), ", ", w2.size(), " and ", b2.size(), " values"));
    }
}

void LayerPredictor::scores(const float* x, int64_t n, float* out) const {
    const ConstMatrixMap X(x, n, n_embd);
    const ConstMatrixMap W1(w1.data(), rank, n_embd);
    const ConstMatrixMap W2(w2.data(), n_ff, rank);
    const RowMatrix H = ((X * W1.transpose()).rowwise() + ConstVectorMap(b1.data(), rank).transpose()).cwiseMax(0.0f);
    Eigen::Map<RowMatrix> S(out, n, n_ff);
    S.noalias() = H * W2.transpose();
    S.rowwise() += ConstVectorMap(b2.data(), n_ff).transpose();
}

int64_t LayerPredictor::predict(const float* x, int32_t* rows, float* scratch, int n_threads) const {
    const ConstMatrixMap W1(w1.data(), rank, n_embd);
    const ConstMatrixMap W2(w2.data(), n_ff, rank);
    Eigen::Map<Eigen::VectorXf> h(scratch + n_ff, rank);
    h.noalias() = W1 * ConstVectorMap(x, n_embd);
    h = (h + ConstVectorMap(b1.data(), rank)).cwiseMax(0.0f);
    // The scores in chunks of neurons, one thread each (W2 is most of the bytes).
    constexpr int64_t kChunk = 512;
    const int64_t n_chunks = (n_ff + kChunk - 1) / kChunk;
#pragma omp parallel for num_threads(n_threads) schedule(static) if (n_threads > 1 && n_chunks > 1)
    for (int64_t c = 0; c < n_chunks; ++c) {
        const int64_t r0 = c * kChunk, len = std::min(kChunk, n_ff - r0);
        Eigen::Map<Eigen::VectorXf>(scratch + r0, len).noalias() = W2.middleRows(r0, len) * h;
    }
    int64_t m = 0;
    for (int64_t i = 0; i < n_ff; ++i) {
        if (scratch[i] + b2[static_cast<size_t>(i)] > threshold) rows[m++] = static_cast<int32_t>(i);
    }
    return m;
}

uint64_t FfnPredictors::bytes() const {
    uint64_t b = 0;
    for (const LayerPredictor& l : layers) b += l.bytes();
    return b;
}

}  // namespace strata
