// Synthetic tensor tables of real model shapes for the placement tests, and a scratch folder.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "offload/hardware_profile.h"
#include "offload/placement.h"
#include "quant/ggml_type.h"

namespace strata::test {

// A llama-architecture model; tensor order as in llama.cpp's GGUF files.
struct LlamaShape {
    int n_layer = 2;
    int64_t n_embd = 256;
    int64_t n_ff = 512;
    int64_t n_head = 4;
    int64_t n_head_kv = 2;
    int64_t n_vocab = 1000;
    bool tied_output = false;            // no output.weight: token_embd is the output projection
    GgmlType type = GgmlType::Q4_K;      // most matrices
    GgmlType big_type = GgmlType::Q6_K;  // attn_v, ffn_down, output
};

inline TensorEntry make_entry(const std::string& name, GgmlType type, int64_t ne0, int64_t ne1) {
    TensorEntry e;
    e.name = name;
    e.type = type;
    e.ne = {ne0, ne1, 1, 1};
    e.bytes = row_bytes(type, ne0) * static_cast<uint64_t>(ne1);
    return e;
}

// A laptop-like machine (8 threads, 12 GB/s PCIe, a mid-range GPU); `scale` multiplies every rate.
inline HardwareProfile laptop(double scale = 1.0) {
    HardwareProfile p;
    p.cpu_name = "test cpu";
    p.cpu_threads = 8;
    p.host_read_gbs = 60 * scale;
    p.cpu_gemv_gbs = {{"q4_K", 45 * scale}, {"q6_K", 40 * scale}};
    p.disk_read_gbs = 3 * scale;
    p.gpu_name = "test gpu";
    p.gpu_read_gbs = 250 * scale;
    p.gpu_gemv_gbs = {{"q4_K", 200 * scale}, {"q6_K", 190 * scale}};
    p.h2d_gbs = 12 * scale;
    p.d2h_gbs = 12 * scale;
    p.transfer_latency_us = 20;
    p.cpu_prefill_gflops = 300 * scale;
    p.gpu_prefill_gflops = 15000 * scale;
    return p;
}

// A 1B-class shape of six layers: the cost model's tests.
inline LlamaShape mid_shape() {
    LlamaShape s;
    s.n_layer = 6;
    s.n_embd = 2048;
    s.n_ff = 5632;
    s.n_head = 16;
    s.n_head_kv = 4;
    s.n_vocab = 32000;
    return s;
}

inline TensorTable make_llama_table(const LlamaShape& s) {
    TensorTable t;
    t.n_layer = s.n_layer;
    t.architecture = "llama";
    const int64_t n_embd_kv = s.n_embd / s.n_head * s.n_head_kv;
    auto add = [&](const std::string& name, GgmlType type, int64_t ne0, int64_t ne1) {
        t.tensors.push_back(make_entry(name, type, ne0, ne1));
    };
    add("token_embd.weight", s.tied_output ? s.big_type : s.type, s.n_embd, s.n_vocab);
    add("output_norm.weight", GgmlType::F32, s.n_embd, 1);
    if (!s.tied_output) add("output.weight", s.big_type, s.n_embd, s.n_vocab);
    for (int l = 0; l < s.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        add(p + "attn_norm.weight", GgmlType::F32, s.n_embd, 1);
        add(p + "attn_q.weight", s.type, s.n_embd, s.n_embd);
        add(p + "attn_k.weight", s.type, s.n_embd, n_embd_kv);
        add(p + "attn_v.weight", s.big_type, s.n_embd, n_embd_kv);
        add(p + "attn_output.weight", s.type, s.n_embd, s.n_embd);
        add(p + "ffn_norm.weight", GgmlType::F32, s.n_embd, 1);
        add(p + "ffn_gate.weight", s.type, s.n_embd, s.n_ff);
        add(p + "ffn_up.weight", s.type, s.n_embd, s.n_ff);
        add(p + "ffn_down.weight", s.big_type, s.n_ff, s.n_embd);
    }
    return t;
}

// Llama-2-70B as a Q4_K_M file lays it out (attn_v, ffn_down and output in Q6_K).
inline LlamaShape llama2_70b_shape() {
    LlamaShape s;
    s.n_layer = 80;
    s.n_embd = 8192;
    s.n_ff = 28672;
    s.n_head = 64;
    s.n_head_kv = 8;
    s.n_vocab = 32000;
    return s;
}

// Every tensor of `table` placed whole on `tier`, KV on RAM.
inline Placement whole_placement(const TensorTable& table, Tier tier) {
    Placement p;
    p.n_ctx = 512;
    for (const TensorEntry& e : table.tensors)
        p.tensors.push_back({e.name, tier});
    p.kv.assign(static_cast<size_t>(table.n_layer), Tier::Ram);
    return p;
}

// The llama table with each layer's FFN made a router [n_embd, n_expert] (f32) and 3-D expert
// tensors of n_ff each (ffn_gate_exps ...), n_used of them active per token.
inline TensorTable make_moe_table(const LlamaShape& s, int64_t n_expert, int n_used) {
    TensorTable t = make_llama_table(s);
    std::vector<TensorEntry> out;
    for (TensorEntry e : t.tensors) {
        const size_t pos = e.name.find(".ffn_");
        if (pos == std::string::npos || e.name.find("_norm") != std::string::npos) {
            out.push_back(e);
            continue;
        }
        const std::string prefix = e.name.substr(0, pos + 1);
        if (e.name.find("ffn_gate.") != std::string::npos) {
            out.push_back(make_entry(prefix + "ffn_gate_inp.weight", GgmlType::F32, s.n_embd, n_expert));
        }
        e.name.replace(e.name.find(".weight"), 7, "_exps.weight");
        e.ne[2] = n_expert;
        e.bytes *= static_cast<uint64_t>(n_expert);
        out.push_back(e);
    }
    t.tensors = out;
    t.n_expert_used = n_used;
    return t;
}

// A fresh folder, removed with its contents at the end of the scope.
class ScratchDir {
  public:
    ScratchDir() {
        std::string tmpl =
            (std::filesystem::temp_directory_path() / "strata-placement-XXXXXX").string();
        path_ = mkdtemp(tmpl.data());
    }
    ~ScratchDir() { std::filesystem::remove_all(path_); }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    std::string file(const std::string& name) const { return (path_ / name).string(); }

  private:
    std::filesystem::path path_;
};

}  // namespace strata::test
