// The calibration file (calibration.h).
#include "engine/runtime/calibration.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "offload/hardware_profile.h"

namespace strata {
namespace {

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) return nullptr;
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) {
        return nullptr;
    }
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

void append_calibration(const std::string& path, const std::string& machine, const Observation& run,
                        const std::string& label) {
    nlohmann::json j = read_json(path);
    if (!j.is_object() || j.value("version", 0) != kCalibrationVersion || j.value("machine", std::string()) != machine ||
        !j.contains("runs") || !j["runs"].is_array()) {
        j = {{"version", kCalibrationVersion}, {"machine", machine}, {"runs", nlohmann::json::array()}};
    }
    j["runs"].push_back({{"gpu_s", run.gpu_s}, {"cpu_s", run.cpu_s}, {"disk_s", run.disk_s},
                         {"transfer_s", run.transfer_s}, {"measured_s", run.measured_s_per_token},
                         {"gpu_fixed_s", run.gpu_fixed_s}, {"cpu_fixed_s", run.cpu_fixed_s},
                         {"graph", run.graph}, {"label", label}});
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp);
        out << j.dump(1) << "\n";
        if (!out) throw SystemError(cat("cannot write the calibration file '", tmp, "'"));
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw SystemError(cat("cannot replace the calibration file '", path, "': ", ec.message()));
}

}  // namespace strata
