// Training of the FFN activity predictors (predictor_train.h): Adam on a weighted binary
// cross-entropy, Eigen for the products.
#include "predictor/predictor_train.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "engine/core/error.h"

namespace strata {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One parameter array and its Adam moments.
struct AdamParam {
    Eigen::ArrayXf value, m, v;
    explicit AdamParam(Eigen::ArrayXf init) : value(std::move(init)), m(Eigen::ArrayXf::Zero(value.size())), v(m) {}
    void step(const Eigen::ArrayXf& grad, float lr, int t) {
        constexpr float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
        m = b1 * m + (1 - b1) * grad;
        v = b2 * v + (1 - b2) * grad.square();
        const float c1 = 1 - std::pow(b1, static_cast<float>(t)), c2 = 1 - std::pow(b2, static_cast<float>(t));
        value -= lr * (m / c1) / ((v / c2).sqrt() + eps);
    }
};

Eigen::ArrayXf random_normal(int64_t n, float scale, std::mt19937& rng) {
    std::normal_distribution<float> d(0.0f, scale);
    Eigen::ArrayXf a(n);
    for (int64_t i = 0; i < n; ++i) a[i] = d(rng);
    return a;
}

void check_options(const PredictorSamples& s, const PredictorTrainOptions& o) {
    const int64_t n = s.n();
    if (s.n_embd <= 0 || s.n_ff <= 0 || s.x.size() != static_cast<size_t>(n * s.n_embd) ||
        s.active.size() != static_cast<size_t>(n * s.n_ff)) {
        throw ArgumentError(cat("predictor samples: ", s.x.size(), " inputs and ", s.active.size(),
                                " labels do not fit n_embd ", s.n_embd, " and n_ff ", s.n_ff));
    }
    if (n < 10) throw ArgumentError(cat("a predictor needs at least 10 samples, got ", n));
    if (o.rank < 1 || o.rank > 4096 || o.epochs < 1 || o.batch < 1 || !(o.learning_rate > 0) || !(o.positive_weight > 0) ||
        !(o.target_recall > 0 && o.target_recall <= 1) || !(o.holdout > 0 && o.holdout < 1)) {
        throw ArgumentError(cat("predictor training: rank ", o.rank, " (1..4096), epochs ", o.epochs, ", batch ", o.batch,
                                ", learning rate ", o.learning_rate, ", positive weight ", o.positive_weight,
                                ", target recall ", o.target_recall, " (0..1], held-out fraction ", o.holdout, " (0..1)"));
    }
}

// The training part's inputs, standardized per dimension (mean, 1/std returned).
RowMatrix standardized(const PredictorSamples& s, int64_t n_train, Eigen::RowVectorXf& mean, Eigen::RowVectorXf& inv_std) {
    const Eigen::Map<const RowMatrix> X(s.x.data(), n_train, s.n_embd);
    mean = X.colwise().mean();
    const RowMatrix centred = X.rowwise() - mean;
    inv_std = ((centred.array().square().colwise().sum() / static_cast<float>(n_train)).sqrt() + 1e-6f).inverse().matrix();
    return centred * inv_std.asDiagonal();
}

struct Net {
    int64_t n_embd, n_ff, rank;
    AdamParam w1, b1, w2, b2;  // w1 [rank][n_embd], w2 [n_ff][rank], row-major
};

// One Adam step on the rows `idx` of the standardized inputs Xs.
void train_step(Net& net, const RowMatrix& Xs, const PredictorSamples& s, const std::vector<int64_t>& idx,
                const PredictorTrainOptions& o, int t) {
    const int64_t B = static_cast<int64_t>(idx.size());
    RowMatrix Xb(B, net.n_embd);
    RowMatrix Y(B, net.n_ff);
    for (int64_t r = 0; r < B; ++r) {
        Xb.row(r) = Xs.row(idx[static_cast<size_t>(r)]);
        const uint8_t* y = s.active.data() + idx[static_cast<size_t>(r)] * net.n_ff;
        for (int64_t i = 0; i < net.n_ff; ++i) Y(r, i) = y[i];
    }
    const Eigen::Map<const RowMatrix> W1(net.w1.value.data(), net.rank, net.n_embd);
    const Eigen::Map<const RowMatrix> W2(net.w2.value.data(), net.n_ff, net.rank);
    const RowMatrix Z1 = (Xb * W1.transpose()).rowwise() + net.b1.value.matrix().transpose();
    const RowMatrix H = Z1.cwiseMax(0.0f);
    const RowMatrix Z2 = (H * W2.transpose()).rowwise() + net.b2.value.matrix().transpose();
    // d loss / d z of w·y·softplus(-z) + (1 - y)·softplus(z), averaged over the batch.
    const Eigen::ArrayXXf sig = (1.0f + (-Z2.array()).exp()).inverse();
    const Eigen::ArrayXXf Ya = Y.array();
    const RowMatrix G = ((Ya * o.positive_weight * (sig - 1.0f) + (1.0f - Ya) * sig) / static_cast<float>(B)).matrix();
    const RowMatrix dW2 = G.transpose() * H;
    const RowMatrix dZ1 = ((G * W2).array() * (Z1.array() > 0.0f).cast<float>()).matrix();
    const RowMatrix dW1 = dZ1.transpose() * Xb;
    net.w2.step(Eigen::Map<const Eigen::ArrayXf>(dW2.data(), dW2.size()), o.learning_rate, t);
    net.b2.step(G.colwise().sum().transpose().array(), o.learning_rate, t);
    net.w1.step(Eigen::Map<const Eigen::ArrayXf>(dW1.data(), dW1.size()), o.learning_rate, t);
    net.b1.step(dZ1.colwise().sum().transpose().array(), o.learning_rate, t);
}

// The trained net as a predictor, the standardization folded into w1 and b1.
LayerPredictor fold(const Net& net, const Eigen::RowVectorXf& mean, const Eigen::RowVectorXf& inv_std) {
    LayerPredictor p;
    p.n_embd = net.n_embd, p.n_ff = net.n_ff, p.rank = net.rank;
    const Eigen::Map<const RowMatrix> W1(net.w1.value.data(), net.rank, net.n_embd);
    const RowMatrix W1f = W1 * inv_std.asDiagonal();  // w1·((x - mean)·inv_std) = W1f·x - W1f·mean
    const Eigen::VectorXf b1f = net.b1.value.matrix() - W1f * mean.transpose();
    p.w1.assign(W1f.data(), W1f.data() + W1f.size());
    p.b1.assign(b1f.data(), b1f.data() + b1f.size());
    p.w2.assign(net.w2.value.data(), net.w2.value.data() + net.w2.value.size());
    p.b2.assign(net.b2.value.data(), net.b2.value.data() + net.b2.value.size());
    return p;
}

// Sets p's threshold for the target recall on samples [begin, n) and measures it there.
void calibrate(LayerPredictor& p, const PredictorSamples& s, int64_t begin, double target_recall) {
    const int64_t n = s.n() - begin;
    std::vector<float> sc(static_cast<size_t>(n * s.n_ff));
    p.scores(s.x.data() + begin * s.n_embd, n, sc.data());
    const uint8_t* y = s.active.data() + begin * s.n_ff;
    std::vector<float> positive;
    for (size_t k = 0; k < sc.size(); ++k) {
        if (y[k] != 0) positive.push_back(sc[k]);
    }
    const size_t n_active = positive.size();
    p.threshold = threshold_for_recall(positive, target_recall);
    uint64_t predicted = 0, hit = 0;
    for (size_t k = 0; k < sc.size(); ++k) {
        const bool on = sc[k] > p.threshold;
        predicted += on;
        hit += on && y[k] != 0;
    }
    p.recall = n_active > 0 ? static_cast<double>(hit) / static_cast<double>(n_active) : 1.0;
    p.predicted_fraction = static_cast<double>(predicted) / static_cast<double>(sc.size());
    p.active_fraction = static_cast<double>(n_active) / static_cast<double>(sc.size());
}

}  // namespace

float threshold_for_recall(std::vector<float>& positive_scores, double target_recall) {
    if (positive_scores.empty()) return std::numeric_limits<float>::max();
    // Up to `missed` positives may score <= t; t just below the (missed)-th smallest score.
    const auto n = static_cast<double>(positive_scores.size());
    const size_t missed = std::min(positive_scores.size() - 1, static_cast<size_t>(std::floor((1.0 - target_recall) * n + 1e-6)));
    std::nth_element(positive_scores.begin(), positive_scores.begin() + static_cast<std::ptrdiff_t>(missed), positive_scores.end());
    return std::nextafter(positive_scores[missed], -std::numeric_limits<float>::infinity());
}

LayerPredictor train_predictor(const PredictorSamples& s, const PredictorTrainOptions& o) {
    check_options(s, o);
    const int64_t n = s.n();
    const int64_t n_train = std::max<int64_t>(1, n - std::max<int64_t>(1, static_cast<int64_t>(o.holdout * static_cast<double>(n))));
    Eigen::RowVectorXf mean, inv_std;
    const RowMatrix Xs = standardized(s, n_train, mean, inv_std);
    std::mt19937 rng(o.seed);
    // b2 starts at each neuron's log-odds of being active, so training starts from the base rates.
    Eigen::ArrayXf b2(s.n_ff);
    for (int64_t i = 0; i < s.n_ff; ++i) {
        double rate = 0;
        for (int64_t r = 0; r < n_train; ++r) rate += s.active[static_cast<size_t>(r * s.n_ff + i)];
        rate = std::clamp(rate / static_cast<double>(n_train), 1e-3, 1 - 1e-3);
        b2[i] = static_cast<float>(std::log(rate / (1 - rate)));
    }
    Net net{s.n_embd, s.n_ff, o.rank,
            AdamParam(random_normal(o.rank * s.n_embd, std::sqrt(2.0f / static_cast<float>(s.n_embd)), rng)),
            AdamParam(Eigen::ArrayXf::Zero(o.rank)),
            AdamParam(random_normal(s.n_ff * o.rank, 0.1f / std::sqrt(static_cast<float>(o.rank)), rng)), AdamParam(b2)};
    std::vector<int64_t> order(static_cast<size_t>(n_train));
    std::iota(order.begin(), order.end(), 0);
    int t = 0;
    for (int epoch = 0; epoch < o.epochs; ++epoch) {
        std::shuffle(order.begin(), order.end(), rng);
        for (int64_t b0 = 0; b0 < n_train; b0 += o.batch) {
            const auto first = order.begin() + b0;
            const std::vector<int64_t> idx(first, first + std::min(o.batch, n_train - b0));
            train_step(net, Xs, s, idx, o, ++t);
        }
    }
    LayerPredictor p = fold(net, mean, inv_std);
    calibrate(p, s, n_train, o.target_recall);
    return p;
}

}  // namespace strata
