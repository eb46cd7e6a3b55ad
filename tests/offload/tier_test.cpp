// Tier names.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "offload/tier.h"

namespace {

TEST(Tier, NamesRoundTrip) {
    for (auto t : {strata::Tier::Gpu, strata::Tier::Ram, strata::Tier::Disk}) {
        EXPECT_EQ(strata::parse_tier(strata::tier_name(t)), t);
    }
    EXPECT_EQ(strata::parse_tier("GPU"), strata::Tier::Gpu);
    EXPECT_THROW(strata::parse_tier("vram"), strata::ArgumentError);
}

}  // namespace
