// Test helper: a model as editable metadata + tensor table (starting from a synth preset),
// written to a temporary GGUF file and read back, so each validation test changes exactly
// one key or tensor of an otherwise valid model.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_value.h"
#include "engine/gguf/model_file.h"
#include "engine/model/model_config.h"
#include "quant/ggml_type.h"

namespace strata::testing {

struct TestTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
};

class TestModel {
  public:
    // The preset's metadata and tensor table (q4_k_m types), optionally with fewer layers.
    static TestModel from_preset(const std::string& preset, int64_t n_layer = 0);

    void set(const std::string& key, GgufValue value);  // replaces or appends
    void erase(const std::string& key);
    void set_arch(const std::string& suffix, GgufValue value);  // "<arch>.<suffix>"
    void erase_arch(const std::string& suffix);
    const std::string& arch() const { return arch_; }

    void erase_tensor(const std::string& name);
    void reshape_tensor(const std::string& name, std::vector<int64_t> ne);
    void add_tensor(TestTensor tensor);
    bool has_tensor(const std::string& name) const;

    // Writes the file (zero tensor data) under the gtest temp dir; returns its path.
    std::string write(const std::string& file_name) const;
    // Writes and opens it; the file is removed once opened (or refused).
    ModelFile open(const std::string& file_name = "test_model.gguf") const;

  private:
    std::string arch_;
    std::vector<std::pair<std::string, GgufValue>> kv_;
    std::vector<TestTensor> tensors_;
};

// Writes, opens and parses; the ModelFile is kept alive only during the call.
ModelConfig load_config(const TestModel& model);

}  // namespace strata::testing
