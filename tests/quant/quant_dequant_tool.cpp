// Test helper for oracle_test.py: pipes raw GGUF blocks through Strata's reference dequantizer
// (or float32 through a reference quantizer), file or stdin in, file or stdout out.
//   quant_dequant_tool dequantize q4_K [--in blocks.bin] [--out floats.bin]
//   quant_dequant_tool quantize q8_0 [--in floats.bin] [--out blocks.bin]
//   quant_dequant_tool types      (one line per known id: id name block_size type_size has_deq has_q)
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "quant/ggml_type.h"

namespace {

std::vector<unsigned char> read_all(const std::string& path) {
    std::FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
    if (f == nullptr) throw std::runtime_error("cannot open " + path + " for reading");
    std::vector<unsigned char> data;
    unsigned char buf[1 << 16];
    size_t got = 0;
    while ((got = std::fread(buf, 1, sizeof(buf), f)) > 0) data.insert(data.end(), buf, buf + got);
    const bool failed = std::ferror(f) != 0;
    if (f != stdin) std::fclose(f);
    if (failed) throw std::runtime_error("read error on " + path);
    return data;
}

void write_all(const std::string& path, const void* data, size_t size) {
    std::FILE* f = path == "-" ? stdout : std::fopen(path.c_str(), "wb");
    if (f == nullptr) throw std::runtime_error("cannot open " + path + " for writing");
    const bool ok = std::fwrite(data, 1, size, f) == size && std::fflush(f) == 0;
    if (f != stdout) std::fclose(f);
    if (!ok) throw std::runtime_error("write error on " + path);
}

const strata::TypeTraits& lookup(const std::string& name) {
    const strata::TypeTraits* t = strata::find_type_traits_by_name(name);
    if (t == nullptr) throw std::invalid_argument("unknown ggml type name '" + name + "'");
    return *t;
}

void dequantize(const std::string& type, const std::string& in, const std::string& out) {
    const strata::TypeTraits& t = lookup(type);
    if (t.dequantize == nullptr) throw std::invalid_argument("no reference dequantizer for " + type);
    const std::vector<unsigned char> raw = read_all(in);
    if (raw.size() % t.type_size != 0) {
        throw std::invalid_argument(std::to_string(raw.size()) + " input bytes is not a whole number of " +
                                    type + " blocks of " + std::to_string(t.type_size) + " bytes");
    }
    const int64_t n = static_cast<int64_t>(raw.size() / t.type_size) * t.block_size;
    // Copy into float storage: the vector's buffer is aligned enough for every block struct.
    std::vector<float> aligned((raw.size() + sizeof(float) - 1) / sizeof(float));
    if (!raw.empty()) std::memcpy(aligned.data(), raw.data(), raw.size());
    std::vector<float> y(static_cast<size_t>(n));
    t.dequantize(aligned.data(), y.data(), n);
    write_all(out, y.data(), y.size() * sizeof(float));
}

void quantize(const std::string& type, const std::string& in, const std::string& out) {
    const strata::TypeTraits& t = lookup(type);
    if (t.quantize == nullptr) throw std::invalid_argument("no reference quantizer for " + type);
    const std::vector<unsigned char> raw = read_all(in);
    if (raw.size() % sizeof(float) != 0) {
        throw std::invalid_argument(std::to_string(raw.size()) + " input bytes is not a whole number of floats");
    }
    std::vector<float> x(raw.size() / sizeof(float));
    if (!raw.empty()) std::memcpy(x.data(), raw.data(), raw.size());
    const int64_t n = static_cast<int64_t>(x.size());
    const size_t n_bytes = strata::row_bytes(t.type, n);  // throws for a partial block
    std::vector<float> q((n_bytes + sizeof(float) - 1) / sizeof(float));
    t.quantize(x.data(), q.data(), n);
    write_all(out, q.data(), n_bytes);
}

void list_types() {
    for (uint32_t id = 0; id < 256; ++id) {
        const strata::TypeTraits* t = strata::find_type_traits(id);
        if (t == nullptr) continue;
        std::printf("%u %.*s %lld %zu %d %d\n", id, static_cast<int>(t->name.size()), t->name.data(),
                    static_cast<long long>(t->block_size), t->type_size, t->dequantize != nullptr,
                    t->quantize != nullptr);
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Strata reference (de)quantizer, for the oracle tests"};
    app.require_subcommand(1);
    std::string type, in = "-", out = "-";
    for (const char* mode : {"dequantize", "quantize"}) {
        CLI::App* sub = app.add_subcommand(mode, std::string(mode) + " a stream of one ggml type");
        sub->add_option("type", type, "ggml type name, e.g. q4_K")->required();
        sub->add_option("--in", in, "input file, - for stdin");
        sub->add_option("--out", out, "output file, - for stdout");
    }
    app.add_subcommand("types", "list the traits table");
    CLI11_PARSE(app, argc, argv);
    try {
        if (app.got_subcommand("types")) {
            list_types();
        } else if (app.got_subcommand("dequantize")) {
            dequantize(type, in, out);
        } else {
            quantize(type, in, out);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "quant_dequant_tool: %s\n", e.what());
        return 1;
    }
    return 0;
}
