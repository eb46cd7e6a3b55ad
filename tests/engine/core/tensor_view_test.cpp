// Views into a tensor (engine/core/tensor.h): rows of a 2-D view and planes of a 3-D one point
// at the right bytes, keep the strides, and refuse indices outside the tensor.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace {

using strata::ArgumentError;
using strata::GgmlType;
using strata::Tensor;

TEST(TensorView, PlaneIsOneTokenOfAThreeDimensionalView) {
    std::vector<float> data(4 * 3 * 5);
    std::iota(data.begin(), data.end(), 0.0f);
    const Tensor t = Tensor::contiguous(GgmlType::F32, data.data(), {4, 3, 5});
    for (int64_t i = 0; i < 5; ++i) {
        const Tensor p = t.plane(i);
        EXPECT_EQ(p.ne[0], 4);
        EXPECT_EQ(p.ne[1], 3);
        EXPECT_EQ(p.ne[2], 1);
        EXPECT_TRUE(p.is_contiguous());
        EXPECT_EQ(p.nb[1], t.nb[1]);
        // Element (e, h) of plane i is element (e, h, i) of the whole.
        for (int64_t h = 0; h < 3; ++h)
            for (int64_t e = 0; e < 4; ++e)
                EXPECT_EQ(p.as<float>()[h * 4 + e], static_cast<float>((i * 3 + h) * 4 + e));
    }
}

TEST(TensorView, PlaneOutsideTheTensorIsRefused) {
    std::vector<float> data(4 * 3 * 2);
    const Tensor t = Tensor::contiguous(GgmlType::F32, data.data(), {4, 3, 2});
    EXPECT_THROW(t.plane(2), ArgumentError);
    EXPECT_THROW(t.plane(-1), ArgumentError);
}

TEST(TensorView, RowsOutsideTheTensorAreRefused) {
    std::vector<float> data(8 * 6);
    const Tensor t = Tensor::contiguous(GgmlType::F32, data.data(), {8, 6});
    EXPECT_EQ(t.rows(2, 4).as<float>(), data.data() + 16);
    EXPECT_EQ(t.rows(2, 4).ne[1], 4);
    EXPECT_THROW(t.rows(3, 4), ArgumentError);
    EXPECT_THROW(t.rows(-1, 1), ArgumentError);
}

}  // namespace
