// libFuzzer target for the GGUF reader. Any input must parse or throw FormatError: anything
// else (a crash, a sanitizer report, another exception, a hang) is a bug. A file that parses is
// touched everywhere, written back with GgufWriter and parsed again; both reads must agree.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace {

using strata::FormatError;
using strata::GgufFile;
using strata::GgufValue;

volatile uint64_t g_sink;

template <typename F>
void try_access(F&& f) {
    try {
        f();
    } catch (const FormatError&) {
    }
}

void touch(const GgufFile& f) {
    uint64_t sum = f.version() + f.alignment() + f.data_offset();
    for (const auto& kv : f.metadata()) {
        const std::string& key =
            kv.first;  // not a structured binding: clang 14 cannot capture those
        const GgufValue& v = kv.second;
        sum += key.size() + v.to_display_string().size() + v.type_string().size();
        try_access([&] { sum += static_cast<uint64_t>(v.as_int(key)); });
        try_access([&] { sum += static_cast<uint64_t>(v.as_float(key) != 0.0); });
        try_access([&] { sum += v.as_bool(key); });
        try_access([&] { sum += v.as_string(key).size(); });
        try_access([&] { sum += v.as_strings(key).size(); });
        try_access([&] { sum += v.as_ints(key).size(); });
        try_access([&] { sum += v.as_floats(key).size(); });
        try_access([&] { sum += v.as_bools(key).size(); });
        if (f.find(key) == nullptr) std::abort();
    }
    for (const strata::TensorInfo& t : f.tensors()) {
        sum += t.shape_string().size() + static_cast<uint64_t>(t.n_elements() + t.n_rows());
        sum += t.data[0] + t.data[t.n_bytes - 1];  // first and last byte are inside the input
        if (f.find_tensor(t.name) != &t) std::abort();
    }
    g_sink = sum;
}

bool same_value(const GgufValue& a, const GgufValue& b) {
    if (a.type() != b.type() || a.packed() != b.packed()) return false;
    if (a.type() == strata::GgufType::STRING) return a.as_string("") == b.as_string("");
    if (!a.is_array()) return true;
    if (a.array_type() != b.array_type() || a.array_size() != b.array_size()) return false;
    return a.array_type() != strata::GgufType::STRING || a.as_strings("") == b.as_strings("");
}

// Writes what was read with GgufWriter, reads it again, and checks nothing changed.
void round_trip(const GgufFile& f) {
    if (f.alignment() > 4096) return;  // padding alone could reach gigabytes
    std::ostringstream out;
    strata::GgufWriter w(out, f.alignment());
    for (const auto& [key, v] : f.metadata())
        w.set(key, v);
    for (const strata::TensorInfo& t : f.tensors()) {
        w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
    }
    w.write_header();
    for (const strata::TensorInfo& t : f.tensors())
        w.write_tensor_data(t.data, t.n_bytes);
    w.finish();
    const std::string bytes = out.str();
    if (bytes.size() != w.total_bytes()) std::abort();
    const GgufFile g = GgufFile::from_memory(reinterpret_cast<const uint8_t*>(bytes.data()),
                                             bytes.size(), "round trip");
    size_t extra =
        f.alignment() != GgufFile::kDefaultAlignment && f.find("general.alignment") == nullptr;
    if (g.metadata().size() != f.metadata().size() + extra) std::abort();
    if (g.tensors().size() != f.tensors().size()) std::abort();
    for (size_t i = 0; i < f.metadata().size(); ++i) {
        if (g.metadata()[i].first != f.metadata()[i].first) std::abort();
        if (!same_value(g.metadata()[i].second, f.metadata()[i].second)) std::abort();
    }
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const strata::TensorInfo &a = f.tensors()[i], &b = g.tensors()[i];
        if (a.name != b.name || a.type != b.type || a.ne != b.ne || a.n_dims != b.n_dims ||
            a.n_bytes != b.n_bytes || std::memcmp(a.data, b.data, a.n_bytes) != 0) {
            std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const GgufFile f = GgufFile::from_memory(data, size, "fuzz.gguf");
        touch(f);
        round_trip(f);
    } catch (const FormatError&) {
        // the expected outcome for a malformed file
    }
    return 0;
}
