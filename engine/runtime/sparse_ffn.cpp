// Calibrated FFN sparsity: thresholds and the neuron-major ffn_down (sparse_ffn.h).
#include "engine/runtime/sparse_ffn.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <vector>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/runtime/ffn_predictors.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/neuron_major_quant.h"
#include "engine/runtime/placed_model.h"
#include "offload/hardware_profile.h"
#include "offload/placement.h"
#include "engine/core/byte_size.h"
#include "predictor/activation_profile_file.h"

namespace strata {
namespace {

constexpr uint64_t kMaxStatsBytes = 1ull << 30;  // a 70B model's stats are ~60 MB

std::string stem_of(const std::string& model_path) {
    const std::string suffix = ".gguf";
    if (model_path.size() > suffix.size() && model_path.ends_with(suffix)) {
        return model_path.substr(0, model_path.size() - suffix.size());
    }
    return model_path;
}

}  // namespace

std::string default_stats_path(const std::string& model_path, bool for_writing) {
    namespace fs = std::filesystem;
    const std::string beside = stem_of(model_path) + ".stats";
    const fs::path folder = fs::path(beside).parent_path().empty() ? fs::path(".") : fs::path(beside).parent_path();
    const bool usable = for_writing ? access(folder.c_str(), W_OK) == 0 : fs::exists(beside);
    if (usable) return beside;
    const fs::path cache = fs::path(default_profile_path()).parent_path();
    return (cache / (fs::path(stem_of(model_path)).filename().string() + ".stats")).string();
}

ActivationProfile read_activation_profile(const std::string& path) {
    if (!std::filesystem::exists(path)) {
        throw SystemError(cat("activation stats '", path, "' do not exist: make them with `strata profile -m MODEL -f TEXT -o ",
                              path, "`"));
    }
    ReadOptions options;
    options.max_bytes = kMaxStatsBytes;
    return activation_profile_from_json(read_bounded_file(path, "activation stats", options), path);
}

void check_profile_for(const ActivationProfile& profile, const Model& model, const std::string& stats_path) {
    const ModelFingerprint fp = model_fingerprint(model);
    if (fp.file_bytes != profile.model_file_bytes || fp.header_hash != profile.model_header_hash) {
        throw FormatError(cat("activation stats '", stats_path, "' were measured on model '", profile.model_name, "' (",
                              profile.model_file_bytes, " bytes, header ", profile.model_header_hash, "), not on '",
                              model.file().shard(0).path(), "' (", fp.file_bytes, " bytes, header ", fp.header_hash,
                              "): run `strata profile` on this model"));
    }
    if (profile.layers.size() != static_cast<size_t>(model.config().n_layer)) {
        throw FormatError(cat("activation stats '", stats_path, "' have ", profile.layers.size(), " layers, the model ",
                              model.config().n_layer));
    }
}

void make_neuron_major(const Tensor& down, Tensor& dst) {
    const int64_t n_ff = down.ne[0], n_embd = down.ne[1];
    const TypeTraits& src = type_traits(down.type);
    const TypeTraits& out = type_traits(dst.type);
    if (src.dequantize == nullptr || out.quantize == nullptr) {
        throw UnsupportedError(cat("cannot re-quantize ", src.name, " ffn_down to ", out.name));
    }
    if (dst.ne[0] != n_embd || dst.ne[1] != n_ff || n_embd % out.block_size != 0) {
        throw ArgumentError(cat("neuron-major copy ", dst.shape_string(), " of ffn_down ", down.shape_string(),
                                ": expected [", n_embd, ", ", n_ff, "] with n_embd a multiple of ", out.block_size));
    }
    // Q4_0 with a least-squares scale (neuron_major_quant.h); the other types by quant/'s reference.
    const QuantizeFn quantize = dst.type == GgmlType::Q4_0 ? quantize_q4_0_mse : out.quantize;
    // A tile of neurons (whole source blocks, at least 64 columns) at a time per thread: from each
    // run of 16 rows of down, the blocks holding the tile's columns are dequantized and written
    // transposed (16 consecutive floats of each of the tile's output rows: one cache line), then
    // the tile's rows are quantized. Nothing the size of the matrix is allocated.
    const int64_t tile = src.block_size * std::max<int64_t>(1, (64 + src.block_size - 1) / src.block_size);
    const int64_t n_tiles = (n_ff + tile - 1) / tile;
    constexpr int64_t kRun = 16;
    const auto* base = static_cast<const uint8_t*>(down.data);
#pragma omp parallel
    {
        std::vector<float> seg(static_cast<size_t>(kRun * tile));          // [kRun rows][tile]
        std::vector<float> cols(static_cast<size_t>(tile * n_embd));       // [tile][n_embd]
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < n_tiles; ++t) {
            const int64_t i0 = t * tile, n = std::min(tile, n_ff - i0);  // n: whole source blocks
            const uint64_t offset = static_cast<uint64_t>(i0 / src.block_size) * src.type_size;
            for (int64_t e0 = 0; e0 < n_embd; e0 += kRun) {
                const int64_t m = std::min(kRun, n_embd - e0);
                for (int64_t r = 0; r < m; ++r) {
                    src.dequantize(base + static_cast<uint64_t>(e0 + r) * down.nb[1] + offset, seg.data() + r * tile, n);
                }
                for (int64_t i = 0; i < n; ++i) {
                    float* c = cols.data() + i * n_embd + e0;
                    for (int64_t r = 0; r < m; ++r) c[r] = seg[static_cast<size_t>(r * tile + i)];
                }
            }
            for (int64_t i = 0; i < n; ++i) {
                quantize(cols.data() + i * n_embd, static_cast<uint8_t*>(dst.data) + static_cast<uint64_t>(i0 + i) * dst.nb[1],
                         n_embd);
            }
        }
    }
}

namespace {

// The sparse ops run where the FFN's three matrices are: one backend with the ops, one part,
// nothing streamed from disk.
void check_sparse_part(const PlacedLayer& l, int il) {
    if (l.ffn.size() != 1) {
        throw UnsupportedError(cat("--sparsity needs each FFN on one backend: layer ", il, "'s FFN is split between tiers",
                                   " (use -ngl, or a placement that keeps each FFN whole)"));
    }
    const FfnPart& p = l.ffn.front();
    const bool streamed = p.gate.stream_id >= 0 || p.up.stream_id >= 0 || p.down.stream_id >= 0;
    if (streamed || p.up.backend != p.gate.backend || p.down.backend != p.gate.backend) {
        throw UnsupportedError(cat("--sparsity needs each FFN's gate, up and down in one memory: layer ", il, "'s are ",
                                   streamed ? "streamed from disk" : "on different backends",
                                   " (give the FFNs room in RAM or on the GPU)"));
    }
    if (!p.gate.backend->capabilities().sparse_ffn) {
        throw UnsupportedError(cat("--sparsity: the ", p.gate.backend->name(), " backend holding layer ", il,
                                   "'s FFN has no sparse FFN ops"));
    }
}

}  // namespace

// The neuron-major copy of layer il's ffn_down in the memory of `backend` (made on the host,
// then copied in for a device).
void SparseFfn::make_layer_copy(Backend& backend, const Tensor& down, int il, Layer& s) {
    const int64_t n_ff = down.ne[0], n_embd = down.ne[1];
    s.down_t = Tensor::contiguous(down_.copy_type, nullptr, {n_embd, n_ff});
    const std::string what = cat("blk.", il, ".ffn_down neuron-major");
    try {
        s.buffer = backend.allocate(s.down_t.n_bytes(), what);
    } catch (const BudgetError& e) {
        throw BudgetError(cat("--sparsity: the ", format_bytes(s.down_t.n_bytes()), " ", type_traits(down_.copy_type).name,
                              " neuron-major ffn_down of layer ", il, " does not fit on the ", backend.name(),
                              " backend (", e.what(), ")"));
    }
    s.down_t.data = s.buffer.data();
    s.down_t.memory = backend.memory_kind();
    if (backend.memory_kind() != MemoryKind::Device) {
        make_neuron_major(down, s.down_t);
        return;
    }
    std::vector<uint8_t> host(s.down_t.n_bytes());
    Tensor staged = Tensor::contiguous(down_.copy_type, host.data(), {n_embd, n_ff});
    make_neuron_major(down, staged);
    backend.copy_in(staged, s.down_t);
}

// The exact input-major copy of the Q4_K matrix w (quant/input_major.h) in host memory of
// `backend`, made by the OpenMP threads in parts of 256 rows (whole cache lines of each column).
void SparseFfn::make_input_major(Backend& backend, const Tensor& w, const std::string& what, InputMajorQ4K& copy,
                                 Buffer& buffer) {
    const int64_t n_in = w.ne[0], n_out = w.ne[1];
    const uint64_t bytes = input_major_q4k_bytes(n_in, n_out);
    try {
        buffer = backend.allocate(bytes, what);
    } catch (const BudgetError& e) {
        throw BudgetError(cat("--input-major: the ", format_bytes(bytes), " input-major copy of ", what,
                              " does not fit on the ", backend.name(), " backend (", e.what(), ")"));
    }
    auto* dst = static_cast<uint8_t*>(buffer.data());
    constexpr int64_t kPart = 256;
    const int64_t n_parts = (n_out + kPart - 1) / kPart;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t part = 0; part < n_parts; ++part) {
        make_input_major_q4k(w.data, n_in, n_out, dst, part * kPart, std::min(n_out, (part + 1) * kPart));
    }
    copy = InputMajorQ4K{dst, n_in, n_out};
    input_major_bytes_ += bytes;
    ++input_major_count_;
}

SparseFfn::SparseFfn(const PlacedModel& placed, const ActivationProfile& profile, double sparsity, SparseDownPolicy down,
                     double input_sparsity, bool input_major)
    : sparsity_(sparsity), down_(down), input_sparsity_(input_sparsity), input_major_asked_(input_major) {
    if (!(sparsity >= 0.0 && sparsity < 1.0)) {
        throw ArgumentError(cat("--sparsity ", sparsity, " is outside [0, 1) (the fraction of FFN neurons skipped)"));
    }
    if (!(input_sparsity >= 0.0 && input_sparsity < 1.0)) {
        throw ArgumentError(cat("--input-sparsity ", input_sparsity,
                                " is outside [0, 1) (the fraction of the FFN input's values set to zero)"));
    }
    const Model& model = placed.model();
    if (profile.layers.size() != static_cast<size_t>(placed.n_layer())) {
        throw FormatError(cat("the activation stats have ", profile.layers.size(), " layers, the model ", placed.n_layer()));
    }
    layers_.resize(static_cast<size_t>(placed.n_layer()));
    for (int il = 0; il < placed.n_layer(); ++il) {
        const PlacedLayer& l = placed.layer(il);
        const LayerWeights& lw = model.weights().layers[static_cast<size_t>(il)];
        if (!present(lw.ffn_gate)) {
            throw UnsupportedError(cat("--sparsity needs a gated FFN (SwiGLU/GeGLU); layer ", il, " of ",
                                       model.config().architecture, " has no ffn_gate"));
        }
        check_sparse_part(l, il);
        if (profile.layers[static_cast<size_t>(il)].n_ff != lw.ffn_gate.ne[1]) {
            throw FormatError(cat("the activation stats give layer ", il, " ", profile.layers[static_cast<size_t>(il)].n_ff,
                                  " FFN neurons, the model ", lw.ffn_gate.ne[1]));
        }
        Layer& s = layers_[static_cast<size_t>(il)];
        // S = 0 keeps every neuron (the threshold below every magnitude).
        s.threshold = sparsity == 0.0 ? -1.0f : static_cast<float>(profile.ffn_threshold(il, sparsity));
        const Backend& home = *l.ffn.front().gate.backend;
        if (input_sparsity > 0.0) {
            if (!home.capabilities().input_mask) {
                throw UnsupportedError(cat("--input-sparsity: the ", home.name(), " backend holding layer ", il,
                                           "'s FFN has no input mask yet (put the FFNs in RAM: --gpu none, or -ngl)"));
            }
            s.input_threshold = static_cast<float>(profile.site_threshold(il, ActivationSite::FfnInput, input_sparsity));
        }
        s.runs_predictor = home.capabilities().predicted_ffn && home.memory_kind() != MemoryKind::Device;
        s.n_ff = lw.ffn_down.ne[0];
        s.n_embd = lw.ffn_down.ne[1];
        Backend& backend = *l.ffn.front().gate.backend;
        const bool by_input = input_major && home.capabilities().input_major && home.memory_kind() != MemoryKind::Device;
        if (by_input && input_sparsity > 0.0 && keeps_input_major(lw.ffn_gate.type, s.n_embd, s.n_ff)) {
            make_input_major(backend, l.ffn.front().gate.tensor, cat("blk.", il, ".ffn_gate"), s.gate_im, s.gate_im_buffer);
        }
        if (!keeps_neuron_major_copy(down_, lw.ffn_down.type, 1.0 - sparsity)) {
            // Decode takes the masked activations (sparse_gated_activation), then ffn_down whole
            // or, with an input-major copy, the active neurons' columns of it.
            if (!home.capabilities().sparse_activation) {
                throw UnsupportedError(cat("--sparsity: the ", home.name(), " backend holding layer ", il,
                                           "'s FFN cannot read ffn_down whole (use --sparse-down q8_0)"));
            }
            if (by_input && keeps_input_major(lw.ffn_down.type, s.n_ff, s.n_embd)) {
                make_input_major(backend, l.ffn.front().down.tensor, cat("blk.", il, ".ffn_down"), s.down_im,
                                 s.down_im_buffer);
            }
            continue;
        }
        make_layer_copy(backend, lw.ffn_down, il, s);
        down_t_bytes_ += s.down_t.n_bytes();
        if (s.down_t.memory == MemoryKind::Device) device_bytes_ += s.down_t.n_bytes();
    }
}

void SparseFfn::set_predictors(FfnPredictors predictors) {
    if (predictors.layers.size() != layers_.size()) {
        throw FormatError(cat("the predictors have ", predictors.layers.size(), " layers, the model ", layers_.size()));
    }
    for (size_t il = 0; il < layers_.size(); ++il) {
        const LayerPredictor& p = predictors.layers[il];
        if (p.n_ff != layers_[il].n_ff || p.n_embd != layers_[il].n_embd) {
            throw FormatError(cat("the predictor of layer ", il, " is for n_embd ", p.n_embd, " and ", p.n_ff,
                                  " FFN neurons, the model's layer has ", layers_[il].n_embd, " and ",
                                  layers_[il].n_ff));
        }
        if (layers_[il].runs_predictor && !has_copy(static_cast<int>(il))) {
            throw ArgumentError(cat("trained predictors read the neuron-major ffn_down copy, and layer ", il,
                                    " has none (--sparse-down whole); use --sparse-down auto or a type"));
        }
    }
    predictors_ = std::move(predictors);
}

const LayerPredictor* SparseFfn::predictor(int il) const {
    const Layer& l = layers_.at(static_cast<size_t>(il));
    return predictors_ && l.runs_predictor ? &predictors_->layers[static_cast<size_t>(il)] : nullptr;
}

std::string sparsity_report(const SparseFfn& sparse, const LayerProgram* program) {
    std::ostringstream out;
    int copies = 0;
    for (int il = 0; il < sparse.n_layer(); ++il) copies += sparse.has_copy(il) ? 1 : 0;
    out << "sparsity: S = " << fixed(sparse.sparsity(), 3) << " of FFN neurons (CATS thresholds), ffn_down neuron-major "
        << type_traits(sparse.down_type()).name << " copy in " << copies << " of " << sparse.n_layer() << " layers ("
        << format_bytes(sparse.down_t_bytes()) << (copies < sparse.n_layer() ? "; the others read ffn_down whole)" : ")");
    if (sparse.input_sparsity() > 0) out << "; FFN input: " << fixed(sparse.input_sparsity(), 3) << " of its values zeroed (TEAL)";
    if (sparse.input_major_count() > 0) {
        out << "; exact input-major copies of " << sparse.input_major_count() << " Q4_K matrices ("
            << format_bytes(sparse.input_major_bytes()) << ")";
    } else if (sparse.input_major_asked()) {
        out << "; --input-major: no Q4_K ffn_down read whole or ffn_gate with --input-sparsity in a CPU FFN to copy";
    }
    out << "\n";
    if (program == nullptr) return out.str();
    const std::vector<LayerProgram::SparsityCount>& counts = program->sparsity_counts();  // one read (a GPU copies)
    if (counts.empty()) return out.str();
    const auto skipped = [](uint64_t kept, uint64_t seen) {
        return seen > 0 ? fixed(1.0 - static_cast<double>(kept) / static_cast<double>(seen), 3) : std::string("-");
    };
    LayerProgram::SparsityCount total;
    out << "sparsity achieved per layer (skipped fraction):";
    for (const LayerProgram::SparsityCount& c : counts) {
        total.add(c);
        out << " " << skipped(c.active, c.evaluated);
    }
    out << " | all layers " << skipped(total.active, total.evaluated) << "\n";
    if (sparse.input_sparsity() > 0) {
        out << "FFN input values zeroed, all layers: " << skipped(total.inputs_kept, total.inputs) << "\n";
    }
    if (const FfnPredictors* p = sparse.predictors()) {
        out << "predictors: rank " << (p->layers.empty() ? 0 : p->layers.front().rank) << ", "
            << format_bytes(p->bytes()) << " f32, trained for held-out recall " << fixed(p->target_recall, 3);
        if (total.predicted > 0) {
            out << "; gate rows read " << fixed(static_cast<double>(total.candidates) / static_cast<double>(total.predicted), 3)
                << " of the predicted tokens' neurons";
        }
        out << "\n";
    }
    return out.str();
}

namespace {

std::string stats_path_of(const std::string& model_path, const SparsityOptions& options) {
    return options.stats_path.empty() ? default_stats_path(model_path, false) : options.stats_path;
}

}  // namespace

std::unique_ptr<SparseFfn> load_sparse_ffn(const PlacedModel& placed, const std::string& model_path,
                                           const SparsityOptions& options, std::optional<FfnPredictors> predictors) {
    if (!options.enabled()) return nullptr;
    if (!(options.sparsity < 1.0)) {
        throw ArgumentError(cat("--sparsity ", options.sparsity, " is outside [0, 1) (the fraction of FFN neurons skipped;",
                                " thresholds come from `strata profile`)"));
    }
    const std::string path = stats_path_of(model_path, options);
    if (!std::filesystem::exists(path)) {
        throw ArgumentError(cat("--sparsity needs activation stats: '", path, "' does not exist; make them with `strata profile -m ",
                                model_path, " -f TEXT -o ", path, "` (or pass --stats FILE)"));
    }
    const ActivationProfile profile = read_activation_profile(path);
    check_profile_for(profile, placed.model(), path);
    auto sparse = std::make_unique<SparseFfn>(placed, profile, options.sparsity, options.down, options.input_sparsity,
                                              options.input_major);
    if (!predictors) predictors = load_predictors(placed.model(), model_path, options);
    if (predictors) sparse->set_predictors(std::move(*predictors));
    return sparse;
}

std::optional<FfnPredictors> load_predictors(const Model& model, const std::string& model_path,
                                             const SparsityOptions& options) {
    if (!options.enabled() || !(options.predictors || !options.predictor_path.empty())) return std::nullopt;
    const std::string file =
        options.predictor_path.empty() ? default_predictor_path(stats_path_of(model_path, options)) : options.predictor_path;
    FfnPredictors predictors = read_ffn_predictors(file);
    check_predictors_for(predictors, model, options.sparsity, file);
    return predictors;
}

void add_predictor_bytes(TensorTable& table, const FfnPredictors& predictors) {
    for (TensorEntry& e : table.tensors) {
        const auto [role, il] = tensor_name_info(e.name);
        if (role != TensorRole::FfnGate || il < 0 || il >= static_cast<int>(predictors.layers.size())) continue;
        e.bytes += predictors.layers[static_cast<size_t>(il)].bytes();
    }
}

void add_neuron_major_bytes(TensorTable& table, const SparsityOptions& options) {
    const TypeTraits& t = type_traits(options.down.copy_type);
    const double active = 1.0 - options.sparsity;
    for (TensorEntry& e : table.tensors) {
        // --input-major's copies, where SparseFfn makes them on a CPU FFN (counted wherever the
        // FFN goes: a placement that puts it on a GPU over-reserves, never under-).
        if (options.input_major && e.layer() >= 0 && e.ne[2] == 1 && keeps_input_major(e.type, e.ne[0], e.ne[1])) {
            const bool gate = e.role() == TensorRole::FfnGate && options.input_sparsity > 0.0;
            const bool down = e.role() == TensorRole::FfnDown && !keeps_neuron_major_copy(options.down, e.type, active);
            if (gate || down) e.bytes += input_major_q4k_bytes(e.ne[0], e.ne[1]);
        }
        if (e.role() != TensorRole::FfnDown || e.layer() < 0 || e.ne[2] != 1 || e.ne[1] % t.block_size != 0) continue;
        if (!keeps_neuron_major_copy(options.down, e.type, active)) continue;
        e.bytes += static_cast<uint64_t>(e.ne[0]) * static_cast<uint64_t>(e.ne[1] / t.block_size) * t.type_size;
    }
}

SparseDownPolicy effective_down_policy(const SparsityOptions& options) {
    SparseDownPolicy p = options.down;
    const bool predictors = options.predictors || !options.predictor_path.empty();
    if (p.mode == SparseDownMode::Auto && predictors) p.mode = SparseDownMode::Copy;
    return p;
}

}  // namespace strata
