// strata calibration: the recorded runs (`strata bench --fit`) beside what the cost model
// predicts for each — from the profile alone, fitted to all runs, and fitted to all the other
// runs (leave-one-out: the honest check of a prediction for a placement not yet measured).
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/runtime/calibration.h"
#include "offload/cost_model.h"
#include "tools/commands.h"
#include "tools/numbers.h"

namespace strata::cli {
namespace {

struct CalibrationArgs {
    std::string file;  // empty: the default calibration file
    double tolerance = 0.15;
    double prior_weight = kDefaultPriorWeight;
    bool json = false;
};

void report(const CalibrationArgs& args) {
    const std::string path = args.file.empty() ? default_calibration_path() : args.file;
    const CalibrationFile file = read_calibration(path);
    if (file.runs.empty()) {
        throw ArgumentError(cat("no calibration runs in ", path, " (missing, unreadable or of another version):",
                                " record some with `strata bench --fit`"));
    }
    std::vector<Observation> all;
    for (const CalibrationRun& r : file.runs) all.push_back(r.observation);
    CostParams fitted;
    if (!fit(fitted, all, args.prior_weight)) {
        std::fprintf(args.json ? stderr : stdout, "the runs cannot be fitted (they would predict no time or infinite time): the profile's values stand\n");
    }
    const CostParams unfitted;
    int within = 0;
    double worst = 1;  // predicted / measured t/s farthest from 1, fitted to the others
    nlohmann::json runs = nlohmann::json::array();
    std::vector<std::string> lines;
    for (size_t i = 0; i < all.size(); ++i) {
        const Observation& o = all[i];
        const double measured = 1.0 / o.measured_s_per_token;
        const double profile_only = 1.0 / predict_decode(unfitted, o);
        const double fitted_all = 1.0 / predict_decode(fitted, o);
        nlohmann::json others = nullptr;
        if (all.size() > 1) {
            std::vector<Observation> rest = all;
            rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
            CostParams c;
            fit(c, rest, args.prior_weight);
            const double predicted = 1.0 / predict_decode(c, o);
            const double ratio = predicted / measured;
            within += std::abs(ratio - 1.0) <= args.tolerance ? 1 : 0;
            if (std::abs(ratio - 1.0) > std::abs(worst - 1.0)) worst = ratio;
            others = predicted;
        }
        runs.push_back({{"label", file.runs[i].label}, {"measured_ts", measured}, {"profile_only_ts", profile_only},
                        {"fitted_to_all_ts", fitted_all}, {"fitted_to_others_ts", others}});
        const auto cell = [&](double predicted) {
            return cat(fixed(predicted, 2), " (x", fixed(predicted / measured, 2), ")");
        };
        lines.push_back(cat("| ", file.runs[i].label, " | ", fixed(measured, 2), " | ", cell(profile_only), " | ",
                            cell(fitted_all), " | ", others.is_null() ? std::string("-") : cell(others.get<double>()), " |"));
    }
    if (args.json) {
        const nlohmann::json j = {{"file", path}, {"machine", file.machine}, {"fit", describe_fit(fitted)},
                                  {"runs", runs}, {"tolerance", args.tolerance},
                                  {"within_tolerance", all.size() > 1 ? nlohmann::json(within) : nlohmann::json()},
                                  {"worst_ratio", all.size() > 1 ? nlohmann::json(worst) : nlohmann::json()}};
        std::printf("%s\n", j.dump(2).c_str());
        return;
    }
    std::printf("%s: %zu run(s) on %s\n", path.c_str(), all.size(), file.machine.c_str());
    std::printf("fitted to all: %s\n\n", describe_fit(fitted).c_str());
    std::printf("| run | measured t/s | profile only | fitted to all | fitted to the others |\n");
    std::printf("| --- | ---: | ---: | ---: | ---: |\n");
    for (const std::string& line : lines) std::printf("%s\n", line.c_str());
    if (all.size() > 1) {
        std::printf("\nfitted to the others: %d of %zu within ±%.0f%% (worst x%.2f)\n", within, all.size(),
                    args.tolerance * 100, worst);
    }
}

}  // namespace

void add_calibration_command(CLI::App& app) {
    auto args = std::make_shared<CalibrationArgs>();
    CLI::App* cmd = app.add_subcommand(
        "calibration", "the runs recorded by `strata bench --fit` beside the cost model's predictions for them");
    cmd->add_option("--file", args->file, "calibration file (default: beside the hardware profile)");
    cmd->add_option("--tolerance", args->tolerance, "the relative error counted as a hit")
        ->check(real_in(0.0, 10.0))
        ->capture_default_str();
    cmd->add_option("--prior-weight", args->prior_weight,
                    "how hard the fit holds to the profile's measured rates (what run, chat and bench use)")
        ->check(real_in(0.0, 1e6))
        ->capture_default_str();
    cmd->add_flag("--json", args->json, "print the runs and predictions as JSON");
    cmd->callback([args] { report(*args); });
}

}  // namespace strata::cli
