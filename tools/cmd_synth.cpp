// strata synth: writes a GGUF model of a real model's shape with random weights, for speed
// and scale tests (engine/synth does the work; this parses options and draws progress).
#include <cstdio>
#include <memory>
#include <string>

#include "engine/core/safe_write.h"
#include "engine/synth/synth_model.h"
#include "engine/synth/synth_preset.h"
#include "engine/core/byte_size.h"
#include "tools/commands.h"
#include "tools/numbers.h"
#include "tools/progress_bar.h"

namespace strata::cli {
namespace {

struct SynthArgs {
    std::string preset;
    std::string output;
    std::string type = "q4_k_m";
    int64_t n_layer = 0;
    int64_t n_vocab = 0;
    uint64_t seed = 42;
    double routing_skew = 0.0;
};

std::string preset_list() {
    std::string text = "Presets:\n";
    for (const SynthPreset& p : synth_presets()) {
        std::string name(p.name);
        name.resize(14, ' ');
        text += "  " + name + std::string(p.description) + "\n";
    }
    return text;
}

void run_synth(const SynthArgs& args) {
    check_write_target(args.output, "GGUF file");  // before the preset's work, not after
    SynthOptions options;
    options.preset = args.preset;
    options.type = parse_synth_type(args.type);
    options.n_layer = args.n_layer;
    options.n_vocab = args.n_vocab;
    options.seed = args.seed;
    options.routing_skew = args.routing_skew;

    ProgressBar bar("synth");
    options.on_progress = [&](const SynthProgress& p) {
        bar.update(p.bytes_done, p.bytes_total, p.tensor_name);
    };
    SynthResult r = write_synth_model(options, args.output);
    bar.finish();
    double mb_per_s = r.seconds > 0 ? static_cast<double>(r.file_bytes) / 1e6 / r.seconds : 0.0;
    std::printf("wrote %s: %s preset, %s, %lld tensors, %s in %.1f s (%.0f MB/s)\n",
                args.output.c_str(), args.preset.c_str(), args.type.c_str(),
                static_cast<long long>(r.n_tensors), format_bytes(r.file_bytes).c_str(), r.seconds,
                mb_per_s);
}

}  // namespace

void add_synth_command(CLI::App& app) {
    auto args = std::make_shared<SynthArgs>();
    CLI::App* cmd = app.add_subcommand(
        "synth", "Write a GGUF model of a real model's shape with random weights");
    cmd->add_option("--preset", args->preset, "Model shape (see the list below)")->required();
    cmd->add_option("-o,--output", args->output, "Output GGUF file")->required();
    cmd->add_option("--type", args->type, "Weight types: " + synth_type_names())
        ->capture_default_str();
    cmd->add_option("--layers", args->n_layer, "Number of layers (default: the preset's)")
        ->check(int_in(1, 4096));
    cmd->add_option("--vocab", args->n_vocab, "Vocabulary size (default: the preset's; for tests)")
        ->check(int_in(1, 1 << 24));
    cmd->add_option("--seed", args->seed, "Random seed; the same seed gives the same file")
        ->capture_default_str()->check(int_in(0, INT64_MAX));
    cmd->add_option("--routing-skew", args->routing_skew,
                    "Mixture-of-experts presets: spread of the experts' router rows (0: none, 1: strong), so "
                    "that some experts are chosen far more often, as in real models")
        ->check(CLI::Range(0.0, 4.0));
    cmd->footer(preset_list());
    cmd->callback([args] { run_synth(*args); });
}

}  // namespace strata::cli
