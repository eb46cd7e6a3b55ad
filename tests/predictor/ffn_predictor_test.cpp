// FFN activity predictors: training recovers a known low-rank rule (recall and precision on
// fresh samples, not the ones it was trained or calibrated on), the recall threshold is exact,
// predict() agrees with scores(), and the file round-trips and refuses bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "engine/core/error.h"
#include "predictor/ffn_predictor.h"
#include "predictor/predictor_file.h"
#include "predictor/predictor_train.h"

namespace strata {
namespace {

// Neuron i is active when a_i · x > c_i, with a_i = U·v_i in a rank-4 subspace: a rule a
// rank-16 predictor (two ReLUs per direction make a linear score) can represent exactly.
struct Rule {
    int64_t n_embd = 24, n_ff = 40, k = 4;
    std::vector<double> a, c;  // [n_ff][n_embd], [n_ff]
    explicit Rule(uint32_t seed) {
        std::mt19937 rng(seed);
        std::normal_distribution<double> d;
        std::vector<double> u(static_cast<size_t>(n_embd * k)), v(static_cast<size_t>(k));
        for (double& x : u) x = d(rng);
        a.assign(static_cast<size_t>(n_ff * n_embd), 0.0);
        for (int64_t i = 0; i < n_ff; ++i) {
            for (double& x : v) x = d(rng);
            for (int64_t e = 0; e < n_embd; ++e) {
                for (int64_t r = 0; r < k; ++r) a[static_cast<size_t>(i * n_embd + e)] += u[static_cast<size_t>(e * k + r)] * v[static_cast<size_t>(r)];
            }
            c.push_back(0.5 * d(rng));
        }
    }
    PredictorSamples samples(int64_t n, uint32_t seed) const {
        std::mt19937 rng(seed);
        std::normal_distribution<float> d;
        PredictorSamples s;
        s.n_embd = n_embd, s.n_ff = n_ff;
        s.x.resize(static_cast<size_t>(n * n_embd));
        for (float& x : s.x) x = 1.5f * d(rng) + 0.3f;  // not standardized: training must cope
        for (int64_t t = 0; t < n; ++t) {
            for (int64_t i = 0; i < n_ff; ++i) {
                double z = 0;
                for (int64_t e = 0; e < n_embd; ++e) z += a[static_cast<size_t>(i * n_embd + e)] * s.x[static_cast<size_t>(t * n_embd + e)];
                s.active.push_back(z > c[static_cast<size_t>(i)] ? 1 : 0);
            }
        }
        return s;
    }
};

TEST(FfnPredictor, TrainingRecoversALowRankRule) {
    const Rule rule(7);
    PredictorTrainOptions o;
    o.rank = 16;
    o.epochs = 40;
    o.batch = 64;
    o.learning_rate = 5e-3f;
    o.target_recall = 0.98;
    const LayerPredictor p = train_predictor(rule.samples(4000, 1), o);
    EXPECT_GE(p.recall, 0.98);
    EXPECT_GT(p.active_fraction, 0.3);
    // Fresh samples: recall near the target and few false positives (a random guess at the
    // same recall would predict ~98% of the pairs).
    const PredictorSamples fresh = rule.samples(1000, 2);
    std::vector<float> sc(static_cast<size_t>(fresh.n() * fresh.n_ff));
    p.scores(fresh.x.data(), fresh.n(), sc.data());
    double active = 0, hit = 0, predicted = 0;
    for (size_t k = 0; k < sc.size(); ++k) {
        const bool on = sc[k] > p.threshold;
        active += fresh.active[k];
        hit += on && fresh.active[k];
        predicted += on;
    }
    EXPECT_GE(hit / active, 0.96) << "recall on fresh samples";
    EXPECT_GE(hit / predicted, 0.85) << "precision on fresh samples";
    EXPECT_LE(predicted, active * 1.2);
}

TEST(FfnPredictor, PredictListsTheRowsScoresPutAboveTheThreshold) {
    const Rule rule(3);
    PredictorTrainOptions o;
    o.rank = 8;
    o.epochs = 2;
    const PredictorSamples s = rule.samples(200, 5);
    const LayerPredictor p = train_predictor(s, o);
    std::vector<float> sc(static_cast<size_t>(s.n() * s.n_ff)), scratch(static_cast<size_t>(p.n_ff + p.rank));
    p.scores(s.x.data(), s.n(), sc.data());
    std::vector<int32_t> rows(static_cast<size_t>(p.n_ff));
    for (int64_t t = 0; t < s.n(); t += 37) {
        const int64_t m = p.predict(s.x.data() + t * s.n_embd, rows.data(), scratch.data());
        std::vector<bool> listed(static_cast<size_t>(p.n_ff), false);
        for (int64_t j = 0; j < m; ++j) {
            if (j > 0) {
                EXPECT_LT(rows[static_cast<size_t>(j - 1)], rows[static_cast<size_t>(j)]);
            }
            listed[static_cast<size_t>(rows[static_cast<size_t>(j)])] = true;
        }
        for (int64_t i = 0; i < p.n_ff; ++i) {
            const float v = sc[static_cast<size_t>(t * p.n_ff + i)];
            if (std::fabs(v - p.threshold) < 1e-4f) continue;  // the two products may round differently
            EXPECT_EQ(listed[static_cast<size_t>(i)], v > p.threshold) << "token " << t << " neuron " << i;
        }
    }
}

TEST(FfnPredictor, RecallThresholdKeepsTheTargetShare) {
    std::vector<float> scores;
    for (int i = 100; i >= 1; --i) scores.push_back(static_cast<float>(i));
    std::vector<float> s = scores;
    const float t = threshold_for_recall(s, 0.9);
    int above = 0;
    for (float v : scores) above += v > t;
    EXPECT_EQ(above, 90);
    EXPECT_GT(t, 10.0f);
    s = scores;
    const float all = threshold_for_recall(s, 1.0);
    EXPECT_LT(all, 1.0f);
    EXPECT_GT(all, 0.999f);
}

TEST(FfnPredictor, TrainingRefusesBadInput) {
    PredictorSamples s;
    s.n_embd = 4, s.n_ff = 3;
    s.x.assign(4 * 5, 1.0f);
    s.active.assign(3 * 5, 1);
    EXPECT_THROW(train_predictor(s, {}), ArgumentError);  // 5 samples
    s.x.assign(4 * 20, 1.0f);
    EXPECT_THROW(train_predictor(s, {}), ArgumentError);  // labels of 5 samples
    s.active.assign(3 * 20, 1);
    PredictorTrainOptions o;
    o.target_recall = 1.5;
    EXPECT_THROW(train_predictor(s, o), ArgumentError);
}

FfnPredictors small_predictors() {
    std::mt19937 rng(11);
    std::normal_distribution<float> d;
    FfnPredictors p;
    p.model_name = "m.gguf", p.model_file_bytes = 12345, p.model_header_hash = "abc123";
    p.text_name = "genesis.txt", p.n_tokens = 2048, p.sparsity = 0.4, p.target_recall = 0.99;
    for (int64_t il = 0; il < 3; ++il) {
        LayerPredictor l;
        l.n_embd = 8 + il, l.n_ff = 20, l.rank = 3;
        for (auto* v : {&l.w1, &l.b1, &l.w2, &l.b2}) v->clear();
        for (int64_t k = 0; k < l.rank * l.n_embd; ++k) l.w1.push_back(d(rng));
        for (int64_t k = 0; k < l.rank; ++k) l.b1.push_back(d(rng));
        for (int64_t k = 0; k < l.n_ff * l.rank; ++k) l.w2.push_back(d(rng));
        for (int64_t k = 0; k < l.n_ff; ++k) l.b2.push_back(d(rng));
        l.threshold = d(rng), l.recall = 0.99, l.predicted_fraction = 0.6, l.active_fraction = 0.5;
        p.layers.push_back(l);
    }
    return p;
}

TEST(PredictorFile, RoundTrips) {
    const FfnPredictors p = small_predictors();
    const FfnPredictors q = predictors_from_bytes(predictors_to_bytes(p), "mem");
    EXPECT_EQ(q.model_name, p.model_name);
    EXPECT_EQ(q.model_file_bytes, p.model_file_bytes);
    EXPECT_EQ(q.model_header_hash, p.model_header_hash);
    EXPECT_EQ(q.n_tokens, p.n_tokens);
    EXPECT_EQ(q.sparsity, p.sparsity);
    ASSERT_EQ(q.layers.size(), p.layers.size());
    for (size_t il = 0; il < p.layers.size(); ++il) {
        EXPECT_EQ(q.layers[il].n_embd, p.layers[il].n_embd);
        EXPECT_EQ(q.layers[il].w1, p.layers[il].w1);
        EXPECT_EQ(q.layers[il].b1, p.layers[il].b1);
        EXPECT_EQ(q.layers[il].w2, p.layers[il].w2);
        EXPECT_EQ(q.layers[il].b2, p.layers[il].b2);
        EXPECT_EQ(q.layers[il].threshold, p.layers[il].threshold);
    }
    EXPECT_EQ(q.bytes(), p.bytes());
}

void expect_format_error(const std::string& bytes, const std::string& needle) {
    try {
        predictors_from_bytes(bytes, "bad.pred");
        ADD_FAILURE() << "accepted: " << needle;
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("bad.pred"), std::string::npos) << e.what();
    }
}

TEST(PredictorFile, RefusesTruncatedOtherFormatsAndVersions) {
    const std::string good = predictors_to_bytes(small_predictors());
    expect_format_error(good.substr(0, good.size() - 4), "truncated");
    expect_format_error(good.substr(0, good.find('\n')), "not a predictor file");
    expect_format_error(good + "xxxx", "header says");
    std::string other = good;
    other.replace(other.find("strata-predictor"), 16, "strata-activator");
    expect_format_error(other, "not a predictor file");
    std::string v2 = good;
    v2.replace(v2.find("\"version\":1"), 11, "\"version\":2");
    expect_format_error(v2, "version 2");
    std::string rank = good;
    rank.replace(rank.find("\"rank\":3"), 8, "\"rank\":30");
    expect_format_error(rank, "outside");
    expect_format_error("{\"format\":\"strata-activation-stats\"}\n", "not a predictor file");
}

}  // namespace
}  // namespace strata
