// Test tool for the gguf-py cross-check (gguf_oracle.py). Two modes, both printing JSON:
//   gguf_dump FILE [--hash]              what ModelFile reads: keys, types, values, tensor table
//   gguf_dump --write-sample FILE ALIGN  writes a sample with GgufWriter; prints what it wrote
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/model_file.h"

namespace {

using nlohmann::json;
using strata::GgufType;
using strata::GgufValue;

uint64_t fnv1a(const uint8_t* p, uint64_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint64_t i = 0; i < n; ++i)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

json element(GgufType t, const uint8_t* p) {
    auto load = [p](auto v) {
        std::memcpy(&v, p, sizeof(v));
        return v;
    };
    switch (t) {
        case GgufType::UINT8:
            return load(uint8_t{});
        case GgufType::INT8:
            return load(int8_t{});
        case GgufType::UINT16:
            return load(uint16_t{});
        case GgufType::INT16:
            return load(int16_t{});
        case GgufType::UINT32:
            return load(uint32_t{});
        case GgufType::INT32:
            return load(int32_t{});
        case GgufType::UINT64:
            return load(uint64_t{});
        case GgufType::INT64:
            return load(int64_t{});
        case GgufType::FLOAT32:
            return static_cast<double>(load(float{}));
        case GgufType::FLOAT64:
            return load(double{});
        case GgufType::BOOL:
            return load(uint8_t{}) != 0;
        default:
            return nullptr;
    }
}

json kv_json(const std::string& key, const GgufValue& v) {
    json j = {{"key", key}, {"type", strata::gguf_type_name(v.type())}};
    if (v.type() == GgufType::STRING) {
        j["value"] = v.as_string(key);
    } else if (!v.is_array()) {
        j["value"] = element(v.type(), v.packed().data());
    } else {
        j["elem_type"] = strata::gguf_type_name(v.array_type());
        json items = json::array();
        if (v.array_type() == GgufType::STRING) {
            for (const std::string& s : v.as_strings(key))
                items.push_back(s);
        } else {
            const size_t size = strata::gguf_scalar_size(v.array_type());
            for (uint64_t i = 0; i < v.array_size(); ++i) {
                items.push_back(element(v.array_type(), v.packed().data() + i * size));
            }
        }
        j["value"] = std::move(items);
    }
    return j;
}

json tensor_json(const std::string& name, strata::GgmlType type, const int64_t* ne, int n_dims,
                 const uint8_t* data, uint64_t n_bytes, bool hash) {
    json j = {{"name", name},
              {"type", static_cast<uint32_t>(type)},
              {"ne", std::vector<int64_t>(ne, ne + n_dims)},
              {"n_bytes", n_bytes}};
    if (hash) j["fnv1a"] = fnv1a(data, n_bytes);
    return j;
}

json dump(const std::string& path, bool hash) {
    const strata::ModelFile m(path);
    json shards = json::array();
    for (int s = 0; s < m.n_shards(); ++s) {
        const strata::GgufFile& f = m.shard(s);
        json kvs = json::array();
        for (const auto& [k, v] : f.metadata())
            kvs.push_back(kv_json(k, v));
        json tensors = json::array();
        for (const strata::TensorInfo& t : f.tensors()) {
            json tj = tensor_json(t.name, t.type, t.ne.data(), t.n_dims, t.data, t.n_bytes, hash);
            tj["offset"] = t.offset;
            tensors.push_back(std::move(tj));
        }
        shards.push_back({{"path", f.path()},
                          {"version", f.version()},
                          {"alignment", f.alignment()},
                          {"data_offset", f.data_offset()},
                          {"kv", std::move(kvs)},
                          {"tensors", std::move(tensors)}});
    }
    return shards;
}

json write_sample(const std::string& path, uint32_t alignment) {
    std::vector<std::pair<std::string, GgufValue>> kvs = {
        {"general.architecture", GgufValue::string("llama")},
        {"general.name", GgufValue::string("sample \xE2\x96\x81 model")},
        {"t.u8", GgufValue::u8(250)},
        {"t.i8", GgufValue::i8(-128)},
        {"t.u16", GgufValue::u16(65535)},
        {"t.i16", GgufValue::i16(-2)},
        {"t.u32", GgufValue::u32(4294967295u)},
        {"t.i32", GgufValue::i32(-123456)},
        {"t.f32", GgufValue::f32(0.1f)},
        {"t.bool", GgufValue::boolean(true)},
        {"t.u64", GgufValue::u64(1ULL << 63)},
        {"t.i64", GgufValue::i64(-(1LL << 40))},
        {"t.f64", GgufValue::f64(-2.75e100)},
        {"t.strings", GgufValue::strings({"<pad>", "<eos>", "", "\xC3\xA9"})},
        {"t.f32s", GgufValue::f32s({1.5f, -0.0f, 3e-20f})},
        {"t.i32s", GgufValue::i32s({-1, 2, 3})},
        {"t.bools", GgufValue::bools({false, true})},
        {"t.u16s", GgufValue::scalar_array(GgufType::UINT16, {1, 0, 2, 1}, 2)},
        {"t.i64s", GgufValue::scalar_array(GgufType::INT64, std::vector<uint8_t>(8, 0xFE), 1)},
    };
    struct T {
        std::string name;
        strata::GgmlType type;
        std::vector<int64_t> ne;
    };
    const std::vector<T> tensors = {{"token_embd.weight", strata::GgmlType::Q4_K, {256, 4}},
                                    {"blk.0.attn_q.weight", strata::GgmlType::Q8_0, {64, 3, 2}},
                                    {"blk.0.attn_norm.weight", strata::GgmlType::F32, {7}},
                                    {"output.weight", strata::GgmlType::F16, {6, 5}}};
    strata::GgufWriter w(path, alignment);
    for (const auto& [k, v] : kvs)
        w.set(k, v);
    for (const T& t : tensors)
        w.add_tensor(t.name, t.type, t.ne);
    w.write_header();
    json out_kvs = json::array(), out_tensors = json::array();
    for (const auto& [k, v] : kvs)
        out_kvs.push_back(kv_json(k, v));
    if (alignment != 32) out_kvs.push_back(kv_json("general.alignment", GgufValue::u32(alignment)));
    uint32_t seed = 1;
    for (const T& t : tensors) {
        const auto& traits = strata::type_traits(t.type);
        uint64_t n_bytes = static_cast<uint64_t>(t.ne[0] / traits.block_size) * traits.type_size;
        for (size_t d = 1; d < t.ne.size(); ++d)
            n_bytes *= static_cast<uint64_t>(t.ne[d]);
        std::vector<uint8_t> data(n_bytes);
        for (auto& b : data)
            b = static_cast<uint8_t>((seed = seed * 1103515245u + 12345u) >> 16);
        w.write_tensor_data(data.data(), data.size());
        out_tensors.push_back(tensor_json(t.name, t.type, t.ne.data(),
                                          static_cast<int>(t.ne.size()), data.data(), n_bytes,
                                          true));
    }
    w.finish();
    return json::array({{{"path", path},
                         {"version", 3},
                         {"alignment", alignment},
                         {"kv", std::move(out_kvs)},
                         {"tensors", std::move(out_tensors)}}});
}

}  // namespace

int main(int argc, char** argv) {
    try {
        json out;
        if (argc == 4 && std::strcmp(argv[1], "--write-sample") == 0) {
            out = write_sample(argv[2], static_cast<uint32_t>(std::stoul(argv[3])));
        } else if (argc == 2 || (argc == 3 && std::strcmp(argv[2], "--hash") == 0)) {
            out = dump(argv[1], argc == 3);
        } else {
            std::fprintf(stderr, "usage: %s FILE [--hash] | --write-sample FILE ALIGNMENT\n",
                         argv[0]);
            return 2;
        }
        std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gguf_dump: %s\n", e.what());
        return 1;
    }
}
