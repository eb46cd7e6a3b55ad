// CpuOpTimes (op_times.h): the table's rows, order and shares from known entries; a scope
// records one call under its label, and a null table records nothing.
#include "kernels_cpu/op_times.h"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace strata::cpu {
namespace {

std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

TEST(CpuOpTimes, TableListsLabelsByTotalWithCallsAndSharesOfTheOps) {
    CpuOpTimes t;
    t.add("matmul q4_K", 3'000'000);
    t.add("matmul q4_K", 1'000'000);  // 2 calls, 4 ms
    t.add("sparse_gated_ffn", 6'000'000);
    t.add("sparse: gather q4_K", 5'000'000);  // a phase: inside sparse_gated_ffn's time
    const std::vector<std::string> l = lines(t.report());
    ASSERT_EQ(l.size(), 5u) << t.report();
    EXPECT_NE(l[2].find("sparse_gated_ffn"), std::string::npos) << l[2];
    EXPECT_NE(l[3].find("sparse: gather q4_K"), std::string::npos) << l[3];
    EXPECT_NE(l[4].find("matmul q4_K"), std::string::npos) << l[4];
    // matmul: 2 calls, 4.0 ms, 2000.0 us a call, 40% of the ops' 10 ms (the phase not counted).
    EXPECT_NE(l[4].find(" 2 "), std::string::npos) << l[4];
    EXPECT_NE(l[4].find("4.0"), std::string::npos) << l[4];
    EXPECT_NE(l[4].find("2000.0"), std::string::npos) << l[4];
    EXPECT_NE(l[4].find("40.0%"), std::string::npos) << l[4];
    EXPECT_NE(l[2].find("60.0%"), std::string::npos) << l[2];
    EXPECT_NE(l[3].find("50.0%"), std::string::npos) << l[3];
}

TEST(CpuOpTimes, MedianCallIsNotMovedByOneSlowCall) {
    CpuOpTimes t;
    t.add("matmul q4_K", 1'000'000);
    t.add("matmul q4_K", 50'000'000);  // a cold first call
    t.add("matmul q4_K", 2'000'000);
    const std::vector<std::string> l = lines(t.report());
    ASSERT_EQ(l.size(), 3u) << t.report();
    EXPECT_NE(l[1].find("median us"), std::string::npos) << l[1];
    // 3 calls, 53 ms: mean 17666.7 us, median 2000.0 us.
    EXPECT_NE(l[2].find("17666.7"), std::string::npos) << l[2];
    EXPECT_NE(l[2].find(" 2000.0 "), std::string::npos) << l[2];
}

TEST(CpuOpTimes, ScopeRecordsOneCallUnderItsLabelAndNullRecordsNothing) {
    CpuOpTimes t;
    {
        const CpuOpScope timed(&t, "matmul", "q8_0", " batch");
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    { const CpuOpScope untimed(nullptr, "matmul", "q8_0"); }
    const std::vector<std::string> l = lines(t.report());
    ASSERT_EQ(l.size(), 3u) << t.report();
    EXPECT_NE(l[2].find("matmul q8_0 batch"), std::string::npos) << l[2];
    EXPECT_NE(l[2].find(" 1 "), std::string::npos) << l[2];
    EXPECT_NE(l[2].find("100.0%"), std::string::npos) << l[2];
}

}  // namespace
}  // namespace strata::cpu
