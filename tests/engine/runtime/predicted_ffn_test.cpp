// Trained FFN predictors in the runtime (issue 19): the sample run records each layer's FFN
// inputs with the profile's masks; a predictor that names every neuron gives threshold-only
// decode's logits, one that names none skips the whole FFN; trained ones read fewer gate rows
// and keep most active neurons; FFNs on a GPU keep the dense gate; bad files are refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/fake_device.h"
#include "engine/core/error.h"
#include "engine/core/safe_write.h"
#include "engine/runtime/ffn_predictors.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/predictor_samples.h"
#include "engine/runtime/profile_run.h"
#include "engine/runtime/session.h"
#include "engine/runtime/sparse_ffn.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "predictor/predictor_file.h"
#include "predictor/predictor_train.h"
#include "tests/engine/synth/scratch_file.h"
#include "tests/engine/runtime/rel_diff.h"

namespace strata {
namespace {

constexpr double kSparsity = 0.5;

std::vector<int32_t> random_tokens(size_t n, int32_t n_vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
    return t;
}

struct Decode {
    std::vector<float> logits;
    uint64_t evaluated = 0, active = 0, predicted = 0, candidates = 0;
};

// Feeds `tokens` in batches of n_batch (1: decode's sparse path) and sums the counts.
Decode decode(const PlacedModel& placed, const SparseFfn* sparse, const std::vector<int32_t>& tokens, size_t n_batch = 1) {
    SessionParams params;
    params.n_ctx = 64;
    params.n_batch = static_cast<int64_t>(n_batch);
    params.sparse = sparse;
    Session session(placed, params);
    std::span<const float> logits;
    for (size_t i = 0; i < tokens.size(); i += n_batch) {
        logits = session.feed({tokens.data() + i, std::min(n_batch, tokens.size() - i)});
    }
    Decode d;
    d.logits.assign(logits.begin(), logits.end());
    for (const auto& c : session.program().sparsity_counts()) {
        d.evaluated += c.evaluated, d.active += c.active, d.predicted += c.predicted, d.candidates += c.candidates;
    }
    return d;
}

using testing::rel_max_diff;

class PredictedFfnTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        file_ = new testing::ScratchFile("predicted_ffn_test.gguf");
        write_synth_model(SynthOptions{}, file_->path());
        model_ = new Model(file_->path());
        calib_ = random_tokens(256, static_cast<int32_t>(model_->config().n_vocab), 11);
        cpu::CpuBackend cpu(2);
        ProfileParams pp;
        pp.n_ctx = 32;
        pp.n_batch = 32;
        profile_ = new ActivationProfile(profile_activations(*model_, cpu, calib_, pp));
        samples_ = new std::vector<PredictorSamples>(
            collect_predictor_samples(*model_, cpu, calib_, pp, *profile_, kSparsity, 200));
        trained_ = new FfnPredictors;
        const ModelFingerprint fp = model_fingerprint(*model_);
        trained_->model_file_bytes = fp.file_bytes;
        trained_->model_header_hash = fp.header_hash;
        trained_->sparsity = kSparsity;
        PredictorTrainOptions o;
        o.rank = 16;
        o.epochs = 30;
        o.target_recall = 0.98;
        for (const PredictorSamples& s : *samples_) trained_->layers.push_back(train_predictor(s, o));
    }
    static void TearDownTestSuite() {
        delete trained_, delete samples_, delete profile_, delete model_, delete file_;
    }
    // The trained predictors with every layer's threshold set to t.
    static FfnPredictors with_threshold(float t) {
        FfnPredictors p = *trained_;
        for (LayerPredictor& l : p.layers) l.threshold = t;
        return p;
    }

    static inline testing::ScratchFile* file_ = nullptr;
    static inline Model* model_ = nullptr;
    static inline std::vector<int32_t> calib_;
    static inline ActivationProfile* profile_ = nullptr;
    static inline std::vector<PredictorSamples>* samples_ = nullptr;
    static inline FfnPredictors* trained_ = nullptr;
    cpu::CpuBackend cpu_{2};  // 8-bit activations: the gathered gate rows equal the dense matmul's bit for bit
};

TEST_F(PredictedFfnTest, SamplesHoldTheFirstTokensWithTheProfilesMasks) {
    ASSERT_EQ(samples_->size(), static_cast<size_t>(model_->config().n_layer));
    for (size_t il = 0; il < samples_->size(); ++il) {
        const PredictorSamples& s = (*samples_)[il];
        EXPECT_EQ(s.n(), 200);  // capped: the 256 calibration tokens are more
        EXPECT_EQ(s.n_embd, model_->config().n_embd);
        EXPECT_EQ(s.n_ff, profile_->layers[il].n_ff);
        ASSERT_EQ(s.active.size(), static_cast<size_t>(200 * s.n_ff));
        // The profile's S = 0.5 threshold leaves about half of the (neuron, token) pairs active.
        uint64_t active = 0;
        for (uint8_t a : s.active) active += a;
        EXPECT_NEAR(static_cast<double>(active) / static_cast<double>(s.active.size()), 1.0 - kSparsity, 0.08) << il;
    }
}

TEST_F(PredictedFfnTest, EveryNeuronACandidateIsThresholdOnlyDecode) {
    const PlacedModel placed(*model_, cpu_);
    const std::vector<int32_t> prompt(calib_.begin(), calib_.begin() + 10);
    const SparseFfn plain(placed, *profile_, kSparsity, copy_every_layer(GgmlType::F32));
    SparseFfn all(placed, *profile_, kSparsity, copy_every_layer(GgmlType::F32));
    all.set_predictors(with_threshold(-std::numeric_limits<float>::max()));
    const Decode a = decode(placed, &plain, prompt), b = decode(placed, &all, prompt);
    EXPECT_LT(rel_max_diff(b.logits, a.logits), 1e-6);
    EXPECT_EQ(b.active, a.active);
    EXPECT_EQ(b.predicted, b.evaluated);  // every decode token went through the predictor
    EXPECT_EQ(b.candidates, b.evaluated);
    EXPECT_EQ(a.predicted, 0u);
}

TEST_F(PredictedFfnTest, NoCandidateSkipsTheWholeFfn) {
    const PlacedModel placed(*model_, cpu_);
    const std::vector<int32_t> prompt(calib_.begin(), calib_.begin() + 6);
    const SparseFfn plain(placed, *profile_, kSparsity, copy_every_layer(GgmlType::F32));
    SparseFfn none(placed, *profile_, kSparsity, copy_every_layer(GgmlType::F32));
    none.set_predictors(with_threshold(std::numeric_limits<float>::max()));
    const Decode d = decode(placed, &none, prompt);
    EXPECT_EQ(d.candidates, 0u);
    EXPECT_EQ(d.active, 0u);
    EXPECT_GT(rel_max_diff(d.logits, decode(placed, &plain, prompt).logits), 1e-3);  // the FFN mattered
}

TEST_F(PredictedFfnTest, TrainedPredictorsReadFewerGateRowsAndKeepMostActiveNeurons) {
    for (const LayerPredictor& l : trained_->layers) {
        EXPECT_GE(l.recall, 0.9);  // held out, at the chosen threshold
        EXPECT_LT(l.predicted_fraction, 1.0);
    }
    const PlacedModel placed(*model_, cpu_);
    // Tokens the predictors were not trained on (the held-out part is the samples' end).
    const std::vector<int32_t> prompt(calib_.begin() + 210, calib_.begin() + 240);
    const SparseFfn plain(placed, *profile_, kSparsity, copy_every_layer(GgmlType::F32));
    SparseFfn predicted(placed, *profile_, kSparsity, copy_every_layer(GgmlType::F32));
    predicted.set_predictors(*trained_);
    const Decode a = decode(placed, &plain, prompt), b = decode(placed, &predicted, prompt);
    EXPECT_LT(b.candidates, b.evaluated);
    EXPECT_GE(b.candidates, b.active);
    EXPECT_GE(static_cast<double>(b.active), 0.85 * static_cast<double>(a.active));
}

// Batches mask the thresholded activation with each token's candidates: decode's function.
TEST_F(PredictedFfnTest, BatchesSkipTheNeuronsDecodeSkips) {
    const PlacedModel placed(*model_, cpu_);
    const std::vector<int32_t> prompt(calib_.begin() + 210, calib_.begin() + 222);
    SparseFfn none(placed, *profile_, kSparsity, copy_every_layer(GgmlType::F32));
    none.set_predictors(with_threshold(std::numeric_limits<float>::max()));
    const Decode d1 = decode(placed, &none, prompt), d12 = decode(placed, &none, prompt, 12);
    EXPECT_EQ(d12.active, 0u);
    EXPECT_EQ(d12.candidates, 0u);
    EXPECT_EQ(d12.predicted, d12.evaluated);
    EXPECT_LT(rel_max_diff(d12.logits, d1.logits), 1e-4);  // no FFN in either: attention alone
    // Every neuron a candidate: the mask changes nothing.
    const SparseFfn plain(placed, *profile_, kSparsity, copy_every_layer(GgmlType::F32));
    SparseFfn all(placed, *profile_, kSparsity, copy_every_layer(GgmlType::F32));
    all.set_predictors(with_threshold(-std::numeric_limits<float>::max()));
    const Decode plain12 = decode(placed, &plain, prompt, 12), all12 = decode(placed, &all, prompt, 12);
    EXPECT_EQ(rel_max_diff(all12.logits, plain12.logits), 0.0);
    EXPECT_EQ(all12.active, plain12.active);
    // Trained: the neurons they miss are removed from the batch too.
    SparseFfn trained(placed, *profile_, kSparsity, copy_every_layer(GgmlType::F32));
    trained.set_predictors(*trained_);
    const Decode t12 = decode(placed, &trained, prompt, 12);
    EXPECT_LT(t12.active, plain12.active);
    EXPECT_GT(t12.candidates, 0u);
    EXPECT_LT(t12.candidates, t12.predicted);
}

TEST_F(PredictedFfnTest, FfnsOnAGpuKeepTheDenseGate) {
    FakeDeviceBackend fake(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 2, .quantize_activations = false});
    const PlacedModel on_gpu(*model_, fake);
    SparseFfn sparse(on_gpu, *profile_, kSparsity, copy_every_layer(GgmlType::F32));
    sparse.set_predictors(with_threshold(std::numeric_limits<float>::max()));
    EXPECT_EQ(sparse.predictor(0), nullptr);
    const std::vector<int32_t> prompt(calib_.begin(), calib_.begin() + 4);
    const Decode d = decode(on_gpu, &sparse, prompt);
    EXPECT_EQ(d.predicted, 0u);
    EXPECT_GT(d.active, 0u);
}

TEST_F(PredictedFfnTest, RefusesPredictorsOfOtherModelsSparsitiesShapesAndBadFiles) {
    try {
        check_predictors_for(*trained_, *model_, 0.7, "m.pred");
        FAIL() << "predictors of another sparsity accepted";
    } catch (const ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("--sparsity 0.5"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(check_predictors_for(*trained_, *model_, kSparsity, "m.pred"));
    FfnPredictors other = *trained_;
    other.model_header_hash = "0000";
    try {
        check_predictors_for(other, *model_, kSparsity, "m.pred");
        FAIL() << "predictors of another model accepted";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("--train-predictors"), std::string::npos) << e.what();
    }
    const PlacedModel placed(*model_, cpu_);
    SparseFfn sparse(placed, *profile_, kSparsity);
    FfnPredictors short_one = *trained_;
    short_one.layers.pop_back();
    EXPECT_THROW(sparse.set_predictors(short_one), FormatError);
    FfnPredictors narrow = *trained_;
    narrow.layers[0].n_ff -= 1;
    EXPECT_THROW(sparse.set_predictors(narrow), FormatError);

    testing::ScratchFile missing("predicted_ffn_missing.pred");
    try {
        read_ffn_predictors(missing.path());
        FAIL() << "a missing file accepted";
    } catch (const SystemError& e) {
        EXPECT_NE(std::string(e.what()).find("--train-predictors"), std::string::npos) << e.what();
    }
    testing::ScratchFile cut("predicted_ffn_cut.pred");
    const std::string bytes = predictors_to_bytes(*trained_);
    write_file_atomic(cut.path(), bytes.substr(0, bytes.size() - 7), "test");
    EXPECT_THROW(read_ffn_predictors(cut.path()), FormatError);
    testing::ScratchFile whole("predicted_ffn_whole.pred");
    write_file_atomic(whole.path(), bytes, "test");
    EXPECT_EQ(read_ffn_predictors(whole.path()).layers.size(), trained_->layers.size());
    EXPECT_EQ(default_predictor_path("/x/m.stats"), "/x/m.pred");
    EXPECT_EQ(default_predictor_path("/x/m.json"), "/x/m.json.pred");
}

// Placements leave room for the predictors: their bytes ride on each layer's ffn_gate entry.
TEST_F(PredictedFfnTest, TheTensorTableCountsThePredictorsBesideTheGate) {
    const TensorTable before = tensor_table(*model_);
    TensorTable after = before;
    add_predictor_bytes(after, *trained_);
    uint64_t added = 0;
    for (size_t i = 0; i < before.tensors.size(); ++i) {
        const uint64_t d = after.tensors[i].bytes - before.tensors[i].bytes;
        if (d > 0) {
            EXPECT_TRUE(before.tensors[i].name.ends_with(".ffn_gate.weight")) << before.tensors[i].name;
        }
        added += d;
    }
    EXPECT_EQ(added, trained_->bytes());
    EXPECT_EQ(after.tensors.size(), before.tensors.size());
}

TEST(PredictorSamples, RefuseBadArguments) {
    testing::ScratchFile f("predictor_samples_bad.gguf");
    write_synth_model(SynthOptions{}, f.path());
    const Model m(f.path());
    cpu::CpuBackend cpu(1);
    ProfileParams pp;
    pp.n_ctx = 32;
    const std::vector<int32_t> tokens = random_tokens(64, static_cast<int32_t>(m.config().n_vocab), 3);
    const ActivationProfile profile = profile_activations(m, cpu, tokens, pp);
    EXPECT_THROW(collect_predictor_samples(m, cpu, tokens, pp, profile, 1.0, 100), ArgumentError);
    EXPECT_THROW(collect_predictor_samples(m, cpu, tokens, pp, profile, 0.5, 5), ArgumentError);
    ActivationProfile fewer = profile;
    fewer.layers.pop_back();
    EXPECT_THROW(collect_predictor_samples(m, cpu, tokens, pp, fewer, 0.5, 100), ArgumentError);
}

}  // namespace
}  // namespace strata
