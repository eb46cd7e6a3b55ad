// strata: the command-line entry point. Parses the subcommand, runs it, and reports any
// failure as one line on stderr: exit 2 for usage errors, 1 for everything else.
#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/core/error.h"
#include "tools/commands.h"
#include "tools/llama_flags.h"
#include "tools/model_names.h"

#ifndef STRATA_VERSION
#define STRATA_VERSION "0.0.0"
#endif

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int fail(const std::string& message, int code) {
    std::string line = message;
    for (char& c : line) {
        if (c == '\n') c = ' ';  // one line, whatever the message
    }
    std::fprintf(stderr, "strata: error: %s\n", line.c_str());
    return code;
}

// Output that could not be written (a full disk, a closed pipe, /dev/full) is a failure: the
// command's result did not reach its reader.
int check_stdout() {
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        return fail(std::string("cannot write the output: ") + std::strerror(errno ? errno : EIO),
                    kExitFailure);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // Over a file size limit (ulimit -f) a write fails with EFBIG, reported as an error, instead
    // of the default SIGXFSZ that kills the process mid-file.
    std::signal(SIGXFSZ, SIG_IGN);
    CLI::App app{"Strata runs GGUF language models larger than the GPU (CPU + GPU + disk)."};
    app.set_version_flag("--version", "strata " STRATA_VERSION);
    app.require_subcommand(1);
    app.fallthrough(false);
    strata::cli::add_run_command(app);
    strata::cli::add_perplexity_command(app);
    strata::cli::add_inspect_command(app);
    strata::cli::add_synth_command(app);
    strata::cli::add_chat_command(app);
    strata::cli::add_plan_command(app);
    strata::cli::add_bench_command(app);
    strata::cli::add_calibration_command(app);
    strata::cli::add_serve_command(app);
    strata::cli::add_profile_command(app);
    strata::cli::add_tokenize_command(app);
    strata::cli::add_list_command(app);
    strata::cli::add_pull_command(app);
    strata::cli::add_model_names(app);  // -m NAME and --hf-repo on every command with -m

    // CLI11 reports an unknown first word as "a subcommand is required"; name it instead.
    if (argc > 1 && argv[1][0] != '-') {
        std::string names;
        bool known = false;
        for (const CLI::App* sub : app.get_subcommands({})) {
            names += (names.empty() ? "" : ", ") + sub->get_name();
            known = known || sub->get_name() == argv[1];
        }
        if (!known) {
            return fail(std::string("unknown command '") + argv[1] + "' (commands: " + names + ")",
                        kExitUsage);
        }
    }
    try {
        strata::cli::rewrite_llama_flags(argc, argv);  // -ngl, -fa, -sys ... (CLI11: one-letter short flags)
        app.parse(argc, argv);  // runs the chosen subcommand's callback
    } catch (const CLI::Success& e) {
        return app.exit(e);  // --help, --version
    } catch (const CLI::ParseError& e) {
        return fail(strata::cli::explain_parse_error(app, e) + " (see 'strata --help')", kExitUsage);
    } catch (const strata::ArgumentError& e) {
        return fail(e.what(), kExitUsage);
    } catch (const std::exception& e) {
        return fail(e.what(), kExitFailure);
    }
    return check_stdout();
}
