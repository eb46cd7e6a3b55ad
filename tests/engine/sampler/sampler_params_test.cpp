// Bad sampling parameters and bad calls are ArgumentErrors whose message carries the value.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "engine/core/error.h"
#include "engine/sampler/sampler.h"

namespace {

using strata::SamplerParams;

// Expects `fn` to throw ArgumentError with every string of `parts` in its message.
void expect_argument_error(const std::function<void()>& fn, std::vector<std::string> parts) {
    try {
        fn();
        ADD_FAILURE() << "no ArgumentError; expected one mentioning " << parts[0];
    } catch (const strata::ArgumentError& e) {
        for (const auto& part : parts) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
                << "message \"" << e.what() << "\" lacks \"" << part << "\"";
        }
    }
}

TEST(SamplerParams, DefaultsAreLlamaCppsAndValid) {
    const SamplerParams p;
    EXPECT_FLOAT_EQ(p.temperature, 0.8f);
    EXPECT_EQ(p.top_k, 40);
    EXPECT_FLOAT_EQ(p.top_p, 0.95f);
    EXPECT_FLOAT_EQ(p.min_p, 0.05f);
    EXPECT_FLOAT_EQ(p.repeat_penalty, 1.0f);
    EXPECT_EQ(p.repeat_last_n, 64);
    EXPECT_EQ(p.presence_penalty, 0.0f);
    EXPECT_EQ(p.frequency_penalty, 0.0f);
    EXPECT_EQ(p.seed, 0xFFFFFFFFu);
    EXPECT_FALSE(p.penalties_active());
    EXPECT_NO_THROW(p.validate());
}

TEST(SamplerParams, AcceptsTheEdgesOfEachRange) {
    for (const auto& edit : std::vector<std::function<void(SamplerParams&)>>{
             [](SamplerParams& p) { p.temperature = 0.0f; },
             [](SamplerParams& p) { p.top_k = 0; },
             [](SamplerParams& p) { p.top_k = 1 << 30; },
             [](SamplerParams& p) { p.top_p = 0.0f; },
             [](SamplerParams& p) { p.top_p = 1.0f; },
             [](SamplerParams& p) { p.min_p = 0.0f; },
             [](SamplerParams& p) { p.min_p = 1.0f; },
             [](SamplerParams& p) { p.repeat_last_n = -1; },
             [](SamplerParams& p) { p.repeat_last_n = 0; },
             [](SamplerParams& p) { p.presence_penalty = -2.0f; },
             [](SamplerParams& p) { p.logit_bias[7] = -INFINITY; },
         }) {
        SamplerParams p;
        edit(p);
        EXPECT_NO_THROW(p.validate());
    }
}

TEST(SamplerParams, RejectsBadValuesNamingThem) {
    struct Case {
        std::function<void(SamplerParams&)> edit;
        std::vector<std::string> parts;
    };
    const std::vector<Case> cases = {
        {[](SamplerParams& p) { p.temperature = -0.5f; }, {"temperature", "-0.5", ">= 0"}},
        {[](SamplerParams& p) { p.temperature = NAN; }, {"temperature", "nan"}},
        {[](SamplerParams& p) { p.top_k = -3; }, {"top_k", "-3", ">= 0"}},
        {[](SamplerParams& p) { p.top_p = 1.5f; }, {"top_p", "1.5", "[0, 1]"}},
        {[](SamplerParams& p) { p.top_p = -0.25f; }, {"top_p", "-0.25", "[0, 1]"}},
        {[](SamplerParams& p) { p.top_p = NAN; }, {"top_p", "nan"}},
        {[](SamplerParams& p) { p.min_p = 2.0f; }, {"min_p", "2", "[0, 1]"}},
        {[](SamplerParams& p) { p.min_p = NAN; }, {"min_p", "nan"}},
        {[](SamplerParams& p) { p.repeat_penalty = 0.0f; }, {"repeat_penalty", "0", "> 0"}},
        {[](SamplerParams& p) { p.repeat_penalty = -1.25f; }, {"repeat_penalty", "-1.25"}},
        {[](SamplerParams& p) { p.repeat_penalty = NAN; }, {"repeat_penalty", "nan"}},
        {[](SamplerParams& p) { p.repeat_last_n = -2; }, {"repeat_last_n", "-2", "-1"}},
        {[](SamplerParams& p) { p.presence_penalty = NAN; }, {"presence_penalty", "nan"}},
        {[](SamplerParams& p) { p.frequency_penalty = INFINITY; }, {"frequency_penalty", "inf"}},
        {[](SamplerParams& p) { p.logit_bias[-4] = 1.0f; }, {"logit_bias", "-4"}},
        {[](SamplerParams& p) { p.logit_bias[12] = NAN; }, {"logit_bias", "12", "nan"}},
        {[](SamplerParams& p) { p.logit_bias[12] = INFINITY; }, {"logit_bias", "12", "inf"}},
    };
    for (const auto& c : cases) {
        SamplerParams p;
        c.edit(p);
        expect_argument_error([&] { p.validate(); }, c.parts);
        expect_argument_error([&] { strata::Sampler(p, 100); }, c.parts);  // checked on build too
    }
}

TEST(SamplerParams, SamplerRejectsBadVocabularyAndCalls) {
    expect_argument_error([] { strata::Sampler(SamplerParams{}, 0); }, {"n_vocab", "0"});
    SamplerParams biased;
    biased.logit_bias[100] = 1.0f;
    expect_argument_error([&] { strata::Sampler(biased, 100); }, {"logit_bias", "100"});

    for (const float temperature : {0.8f, 0.0f}) {  // the chain, and greedy's copy-free argmax
        SCOPED_TRACE(temperature);
        SamplerParams params;
        params.temperature = temperature;
        strata::Sampler sampler(params, 4);
        std::vector<float> logits = {0.0f, 1.0f, 2.0f};
        expect_argument_error([&] { sampler.sample(logits); }, {"3 logits", "4"});
        logits = {0.0f, 1.0f, NAN, 2.0f};
        expect_argument_error([&] { sampler.sample(logits); }, {"token 2", "nan"});
        logits = {0.0f, 1.0f, 2.0f, INFINITY};
        expect_argument_error([&] { sampler.sample(logits); }, {"token 3", "inf"});
        logits.assign(4, -INFINITY);
        expect_argument_error([&] { sampler.sample(logits); }, {"-inf"});
    }
    strata::Sampler sampler(SamplerParams{}, 4);
    expect_argument_error([&] { sampler.accept(4); }, {"token 4"});
    expect_argument_error([&] { sampler.accept(-1); }, {"token -1"});
}

}  // namespace
