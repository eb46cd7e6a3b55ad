// Test helper implementation (see test_model_builder.h).
#include "tests/engine/model/test_model_builder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "engine/gguf/gguf_writer.h"
#include "engine/synth/synth_metadata.h"
#include "engine/synth/synth_model.h"

namespace strata::testing {

TestModel TestModel::from_preset(const std::string& preset, int64_t n_layer) {
    SynthOptions options;
    options.preset = preset;
    options.n_layer = n_layer;
    SynthPlan plan = plan_synth_model(options);
    TestModel m;
    m.arch_ = plan.config.architecture;
    m.kv_ = synth_metadata(plan, options);
    for (const SynthTensor& t : plan.tensors)
        m.tensors_.push_back({t.spec.name, t.type, t.spec.ne});
    return m;
}

void TestModel::set(const std::string& key, GgufValue value) {
    for (auto& [k, v] : kv_) {
        if (k == key) {
            v = std::move(value);
            return;
        }
    }
    kv_.emplace_back(key, std::move(value));
}

void TestModel::erase(const std::string& key) {
    std::erase_if(kv_, [&](const auto& kv) { return kv.first == key; });
}

void TestModel::set_arch(const std::string& suffix, GgufValue value) {
    set(arch_ + "." + suffix, std::move(value));
}

void TestModel::erase_arch(const std::string& suffix) {
    erase(arch_ + "." + suffix);
}

void TestModel::erase_tensor(const std::string& name) {
    if (!has_tensor(name)) throw std::logic_error("test: no tensor " + name);
    std::erase_if(tensors_, [&](const TestTensor& t) { return t.name == name; });
}

void TestModel::reshape_tensor(const std::string& name, std::vector<int64_t> ne) {
    for (TestTensor& t : tensors_) {
        if (t.name == name) {
            t.ne = std::move(ne);
            if (t.ne[0] % type_traits(t.type).block_size != 0) t.type = GgmlType::F32;
            return;
        }
    }
    throw std::logic_error("test: no tensor " + name);
}

void TestModel::add_tensor(TestTensor tensor) {
    tensors_.push_back(std::move(tensor));
}

bool TestModel::has_tensor(const std::string& name) const {
    return std::any_of(tensors_.begin(), tensors_.end(),
                       [&](const TestTensor& t) { return t.name == name; });
}

std::string TestModel::write(const std::string& file_name) const {
    // ctest runs test cases in parallel processes: the pid keeps their files apart.
    std::string path = ::testing::TempDir() + std::to_string(getpid()) + "_" + file_name;
    GgufWriter w(path);
    for (const auto& [k, v] : kv_)
        w.set(k, v);
    for (const TestTensor& t : tensors_)
        w.add_tensor(t.name, t.type, t.ne);
    w.write_header();
    std::vector<uint8_t> zeros(1 << 20, 0);
    for (const TestTensor& t : tensors_) {
        int64_t rows = 1;
        for (size_t i = 1; i < t.ne.size(); ++i)
            rows *= t.ne[i];
        uint64_t left = row_bytes(t.type, t.ne[0]) * static_cast<uint64_t>(rows);
        while (left > 0) {
            size_t n = std::min<uint64_t>(left, zeros.size());
            w.write_tensor_data(zeros.data(), n);
            left -= n;
        }
    }
    w.finish();
    return path;
}

ModelFile TestModel::open(const std::string& file_name) const {
    const std::string path = write(file_name);
    // The file is mapped: it can go now (and does, when opening it throws), so test runs
    // leave nothing behind.
    struct Remove {
        const std::string& path;
        ~Remove() { std::remove(path.c_str()); }
    } remove{path};
    return ModelFile(path);
}

ModelConfig load_config(const TestModel& model) {
    ModelFile file = model.open();
    return ModelConfig::from_file(file);
}

}  // namespace strata::testing
