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

std::vector<Observation> load_calibration(const std::string& path, const std::string& machine) {
    const nlohmann::json j = read_json(path);
    std::vector<Observation> runs;
    if (!j.is_object() || j.value("machine", std::string()) != machine || !j.contains("runs") || !j["runs"].is_array()) {
        return runs;
    }
    for (const auto& r : j["runs"]) {
        try {
            Observation o;
            o.gpu_s = r.at("gpu_s").get<double>();
            o.cpu_s = r.at("cpu_s").get<double>();
            o.disk_s = r.at("disk_s").get<double>();
            o.transfer_s = r.at("transfer_s").get<double>();
            o.measured_s_per_token = r.at("measured_s").get<double>();
            o.gpu_blocks = r.value("gpu_blocks", 0.0);
            o.cpu_blocks = r.value("cpu_blocks", 0.0);
            if (o.measured_s_per_token > 0) runs.push_back(o);
        } catch (const nlohmann::json::exception&) {
            // A damaged entry is skipped; the others still calibrate.
        }
    }
    return runs;
}

void append_calibration(const std::string& path, const std::string& machine, const Observation& run,
                        const std::string& label) {
    nlohmann::json j = read_json(path);
    if (!j.is_object() || j.value("machine", std::string()) != machine || !j.contains("runs") || !j["runs"].is_array()) {
        j = {{"machine", machine}, {"runs", nlohmann::json::array()}};
    }
    j["runs"].push_back({{"gpu_s", run.gpu_s}, {"cpu_s", run.cpu_s}, {"disk_s", run.disk_s},
                         {"transfer_s", run.transfer_s}, {"measured_s", run.measured_s_per_token},
                         {"gpu_blocks", run.gpu_blocks}, {"cpu_blocks", run.cpu_blocks},
                         {"label", label}});
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
