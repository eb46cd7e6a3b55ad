// CPU feature detection agrees with the kernel's own report in /proc/cpuinfo.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "kernels_cpu/cpu_features.h"

namespace {

std::string cpuinfo_flags() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("flags", 0) == 0) return " " + line.substr(line.find(':') + 1) + " ";
    }
    return "";
}

bool has_flag(const std::string& flags, const std::string& name) {
    return flags.find(" " + name + " ") != std::string::npos;
}

TEST(CpuFeatures, AgreesWithProcCpuinfo) {
    const std::string flags = cpuinfo_flags();
    if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line";
    const auto& f = strata::cpu::cpu_features();
    EXPECT_EQ(f.avx2, has_flag(flags, "avx2"));
    EXPECT_EQ(f.fma, has_flag(flags, "fma"));
    EXPECT_EQ(f.f16c, has_flag(flags, "f16c"));
    EXPECT_EQ(f.avx512f, has_flag(flags, "avx512f"));
    EXPECT_EQ(f.avx512vnni, has_flag(flags, "avx512_vnni"));
    // Usable AMX needs more than the CPU flag (OS state, permission), never less.
    if (f.amx_bf16) {
        EXPECT_TRUE(has_flag(flags, "amx_bf16"));
        EXPECT_TRUE(has_flag(flags, "amx_tile"));
    }
}

TEST(CpuFeatures, CoreCountsAreConsistent) {
    const auto& f = strata::cpu::cpu_features();
    EXPECT_GE(f.logical_cores, 1);
    EXPECT_GE(f.physical_cores, 1);
    EXPECT_LE(f.physical_cores, f.logical_cores);
}

}  // namespace
