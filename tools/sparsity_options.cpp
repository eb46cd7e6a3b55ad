// Activation-sparsity flags (sparsity_options.h).
#include "tools/sparsity_options.h"

#include "engine/core/error.h"
#include "quant/ggml_type.h"

namespace strata::cli {

SparsityOptions SparsityFlags::options() const {
    SparsityOptions o;
    const bool given = sparsity_option != nullptr && sparsity_option->count() > 0;
    if (!given) {
        o.stats_path = stats;  // a mixture of experts' routing counts, for the planner (the runtime checks)
        if (predictors || !predictor_file.empty()) {
            throw ArgumentError("--predictors and --predictor-file need --sparsity S (the sparsity they were trained for)");
        }
        if (input_sparsity != 0.0) {
            throw ArgumentError("--input-sparsity needs --sparsity S (S = 0: the input's sparsity alone)");
        }
        if (input_major) throw ArgumentError("--input-major needs --sparsity S (the copies serve sparse decode)");
        return o;
    }
    if ((predictors || !predictor_file.empty()) && hot_neurons) {
        throw ArgumentError("--predictors runs on FFNs in RAM; --hot-neurons splits them with the GPU, which reads every"
                            " gate row: use one of them");
    }
    if (input_major && (predictors || !predictor_file.empty() || hot_neurons)) {
        throw ArgumentError("--input-major's copies are read by the plain sparse decode; --predictors and --hot-neurons"
                            " read their FFNs another way: use one of them");
    }
    if (!(sparsity >= 0.0 && sparsity < 1.0)) {
        throw ArgumentError(cat("--sparsity ", sparsity, " is outside [0, 1): it is the fraction of FFN neurons skipped,",
                                " with thresholds calibrated by `strata profile -m MODEL -f TEXT`"));
    }
    o.sparsity = sparsity;
    o.stats_path = stats;
    o.predictors = predictors || !predictor_file.empty();
    o.predictor_path = predictor_file;
    if (down_type == "auto" || down_type == "whole") {
        o.down.mode = down_type == "auto" ? SparseDownMode::Auto : SparseDownMode::Whole;
    } else {
        const TypeTraits* t = find_type_traits_by_name(down_type);
        if (t == nullptr || t->quantize == nullptr || t->dequantize == nullptr) {
            throw ArgumentError(cat("--sparse-down '", down_type, "' is neither auto, whole nor a type Strata can quantize",
                                    " to (q8_0, f16, q6_K...)"));
        }
        o.down = SparseDownPolicy{SparseDownMode::Copy, t->type};
    }
    if (!(input_sparsity >= 0.0 && input_sparsity < 1.0)) {
        throw ArgumentError(cat("--input-sparsity ", input_sparsity,
                                " is outside [0, 1): it is the fraction of the FFN input's values set to zero"));
    }
    o.input_sparsity = input_sparsity;
    o.input_major = input_major;
    return o;
}

void add_sparsity_options(CLI::App& cmd, SparsityFlags& flags) {
    flags.sparsity_option = cmd.add_option(
        "--sparsity", flags.sparsity,
        "skip this fraction of FFN neurons per token (0 <= S < 1; CPU or GPU FFNs; thresholds from `strata profile`)");
    cmd.add_option("--stats", flags.stats,
                   "activation stats from `strata profile` (default: MODEL.stats beside the model, else"
                   " ~/.cache/strata/MODEL.stats)");
    cmd.add_option("--sparse-down", flags.down_type,
                   "how sparse decode reads ffn_down: auto (a Q8_0 neuron-major copy in the layers where it reads"
                   " less than the whole matrix, e.g. not of Q4_K at S = 0.5), whole (no copy), or a type for a copy"
                   " in every layer (q4_0 halves its bytes but cost Gemma 3 270M +9% perplexity: docs/SPARSITY.md)")
        ->capture_default_str();
    cmd.add_option("--input-sparsity", flags.input_sparsity,
                   "with --sparsity: also zero this fraction of each FFN's normed input, the smallest values"
                   " (TEAL; thresholds from the stats; FFNs in RAM). Measures the method's quality: decode still"
                   " reads every gate byte");
    cmd.add_flag("--input-major", flags.input_major,
                 "with --sparsity: exact input-major copies of the Q4_K matrices sparse decode reads by input (FFNs"
                 " in RAM): ffn_down where no re-quantized copy is kept (only the active neurons' columns are read)"
                 " and, with --input-sparsity, ffn_gate (only the nonzero inputs' columns). Same values, no"
                 " re-quantization; costs their bytes again in RAM");
    cmd.add_flag("--predictors", flags.predictors,
                 "with --sparsity: trained predictors (`strata profile --train-predictors`) choose which FFN neurons"
                 " a token evaluates, so the other neurons' gate rows are not read either (FFNs in RAM)");
    cmd.add_option("--predictor-file", flags.predictor_file,
                   "predictors to use (implies --predictors; default: the stats file's name with .pred)");
    cmd.add_flag("--hot-neurons", flags.hot_neurons,
                 "with --sparsity: FFNs off the GPU in the placement; the GPU's room left holds each layer's most often"
                 " active neurons (from the stats), the CPU the rest");
}

}  // namespace strata::cli
