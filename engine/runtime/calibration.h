// Calibration: measured decode runs kept beside the hardware profile (calibration.json in the
// same folder), to which the cost model's constants are fitted at start-up, FlexGen-style:
// `strata bench --fit` adds runs; run, chat, plan and bench fit to them.
#pragma once

#include <string>
#include <vector>

#include "offload/cost_model.h"

namespace strata {

std::string default_calibration_path();

// Observations are cost-model terms: runs recorded by another version of the model (other
// terms, other units) are not fitted to. Raised with every change to what observe() returns.
constexpr int kCalibrationVersion = 4;

struct CalibrationRun {
    Observation observation;
    std::string label;  // model, test and bytes per tier, for reading
};
struct CalibrationFile {
    std::string machine;  // "" when the file is missing, unreadable or of another version
    std::vector<CalibrationRun> runs;
};
// The whole file, whatever machine it is from (damaged entries skipped).
CalibrationFile read_calibration(const std::string& path);

// The runs recorded on `machine` (a CPU + GPU name); empty when the file is missing, unreadable,
// of another version or from another machine (a calibration never crosses machines).
std::vector<Observation> load_calibration(const std::string& path, const std::string& machine);

// Adds one run. A file that is damaged, of another version or of another machine is kept aside
// under a new name (never discarded) and a new one started: the returned note says so (empty when
// nothing was kept aside). SystemError when it cannot be written.
std::string append_calibration(const std::string& path, const std::string& machine,
                               const Observation& run, const std::string& label);

}  // namespace strata
