// The tiny-model logits oracle shared by moe_oracle_test and dense_oracle_test: a Python script
// (numpy + gguf) writes a tiny random GGUF, whose sha256 must equal the one in the fixture that
// transformers made from the same file; every position's logits must agree, through prefill
// (the whole prompt in one batch) and token-by-token decode.
#pragma once

#include <cstdint>
#include <string>

namespace strata::testing {

struct TinyOracleCase {
    const char* script;   // under tests/engine/runtime: make_tiny_moe.py, make_tiny_dense.py
    const char* arch;     // the script's model name
    const char* type;     // f32, f16, q8_0
    const char* fixture;  // under tests/engine/runtime/fixtures
    bool quantized_activations = false;
    bool check_digest = true;  // false: another type than the fixture's file (f16 against f32)
};

struct TinyOracleResult {
    std::string error;  // non-empty: the model could not be made or the fixture read
    double prefill_err = 0, decode_err = 0;  // max |dlogit| over every position and token
    int64_t agree = 0, positions = 0;        // top-1 agreement (prefill)
    bool is_moe = false;
};

TinyOracleResult run_tiny_oracle(const TinyOracleCase& tc);

}  // namespace strata::testing
