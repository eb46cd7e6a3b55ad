// The calibration file (calibration.h).
#include "engine/runtime/calibration.h"

#include <chrono>
#include <ctime>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/core/safe_write.h"
#include "offload/hardware_profile.h"

namespace strata {
namespace {

constexpr const char* kWhat = "calibration file";

// The file's JSON; null when it is missing, and `damage` set when it exists but cannot be used.
nlohmann::json read_json(const std::string& path, std::string* damage = nullptr) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return nullptr;
    try {
        return read_json_file(path, kWhat, ReadOptions{kMaxJsonFileBytes, /*note_input=*/false});
    } catch (const Error& e) {
        if (damage) *damage = e.what();
        return nullptr;
    }
}

// A file that cannot take the new run is kept under a new name, never discarded.
std::string keep_aside(const std::string& path, const std::string& why) {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&now));
    std::string kept = path + ".old-" + stamp;
    std::error_code ec;
    for (int i = 1; std::filesystem::exists(kept, ec); ++i) kept = cat(path, ".old-", stamp, "-", i);
    std::filesystem::rename(path, kept, ec);
    if (ec) {
        throw SystemError(cat("the ", kWhat, " '", path, "' ", why, " and cannot be kept aside (",
                              ec.message(), "): nothing was recorded; move it away and run again"));
    }
    return cat("the ", kWhat, " '", path, "' ", why, "; it was kept as '", kept,
               "' and a new one was started");
}

}  // namespace

std::string default_calibration_path() {
    return (std::filesystem::path(default_profile_path()).parent_path() / "calibration.json").string();
}

CalibrationFile read_calibration(const std::string& path) {
    const nlohmann::json j = read_json(path);
    CalibrationFile file;
    if (!j.is_object() || j.value("version", 0) != kCalibrationVersion || !j.contains("runs") ||
        !j["runs"].is_array() || !j.contains("machine") || !j["machine"].is_string()) {
        return file;
    }
    file.machine = j["machine"].get<std::string>();
    for (const auto& r : j["runs"]) {
        try {
            CalibrationRun run;
            Observation& o = run.observation;
            o.gpu_s = r.at("gpu_s").get<double>();
            o.cpu_s = r.at("cpu_s").get<double>();
            o.disk_s = r.at("disk_s").get<double>();
            o.transfer_s = r.at("transfer_s").get<double>();
            o.measured_s_per_token = r.at("measured_s").get<double>();
            o.gpu_fixed_s = r.at("gpu_fixed_s").get<double>();
            o.cpu_fixed_s = r.at("cpu_fixed_s").get<double>();
            o.graph = r.at("graph").get<bool>();
            run.label = r.value("label", std::string());
            if (o.measured_s_per_token > 0) file.runs.push_back(std::move(run));
        } catch (const nlohmann::json::exception&) {
            // A damaged entry is skipped; the others still calibrate.
        }
    }
    return file;
}

std::vector<Observation> load_calibration(const std::string& path, const std::string& machine) {
    const CalibrationFile file = read_calibration(path);
    std::vector<Observation> runs;
    if (file.machine != machine) return runs;
    for (const CalibrationRun& r : file.runs) runs.push_back(r.observation);
    return runs;
}

std::string append_calibration(const std::string& path, const std::string& machine,
                               const Observation& run, const std::string& label) {
    std::string damage;
    nlohmann::json j = read_json(path, &damage);
    std::string note;
    if (!damage.empty()) {
        note = keep_aside(path, cat("cannot be read (", damage, ")"));
    } else if (!j.is_null()) {
        const bool usable = j.is_object() && j.value("version", 0) == kCalibrationVersion &&
                            j.contains("runs") && j["runs"].is_array() && j.contains("machine") &&
                            j["machine"].is_string();
        if (!usable) {
            note = keep_aside(path, cat("is not a version ", kCalibrationVersion, " calibration file"));
            j = nullptr;
        } else if (j["machine"].get<std::string>() != machine) {
            note = keep_aside(path, cat("holds the runs of another machine (", j["machine"].get<std::string>(), ")"));
            j = nullptr;
        }
    }
    if (j.is_null()) j = {{"version", kCalibrationVersion}, {"machine", machine}, {"runs", nlohmann::json::array()}};
    j["runs"].push_back({{"gpu_s", run.gpu_s}, {"cpu_s", run.cpu_s}, {"disk_s", run.disk_s},
                         {"transfer_s", run.transfer_s}, {"measured_s", run.measured_s_per_token},
                         {"gpu_fixed_s", run.gpu_fixed_s}, {"cpu_fixed_s", run.cpu_fixed_s},
                         {"graph", run.graph}, {"label", label}});
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    write_file_atomic(path, j.dump(1) + "\n", kWhat);
    return note;
}

}  // namespace strata
