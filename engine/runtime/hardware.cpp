// The cached or freshly measured hardware profile of this machine (hardware.h).
#include "engine/runtime/hardware.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>

#include "backends/builtin_backends.h"
#include "engine/core/env_switch.h"
#include "engine/core/error.h"
#include "offload/busy_check.h"
#include "offload/disk_profile.h"

namespace strata {
namespace {

using Seconds = std::chrono::duration<double>;

bool quick_from_env() {
    return env_turned_on("STRATA_QUICK_PROFILE");
}

// Prints "profiling: step, step, ..." on one line as the steps come, or hands each to on_step.
struct StepLog {
    std::ostream& log;
    const std::function<void(std::string_view)>& on_step;
    bool first = true;
    bool any = false;
    void operator()(std::string_view step) {
        if (on_step) {
            on_step(step);
            any = true;
            return;
        }
        log << (first ? "profiling: " : ", ") << step << std::flush;
        first = false;
    }
    // The measurements are over: a progress bar ends before the log speaks again.
    void end() {
        if (on_step && any) on_step("");
        any = false;
    }
};

// The CPU half of `p` in the terms of device rates (what a device on the host derives its own from).
DeviceRates host_rates(const HardwareProfile& p) {
    DeviceRates h;
    h.name = p.cpu_name;
    h.read_gbs = p.host_read_gbs;
    h.gemv_gbs = p.cpu_gemv_gbs;
    h.op_us = p.cpu_op_us;
    h.gemv_floor_us = p.cpu_gemv_floor_us;
    h.gemv_tiny_floor_us = p.cpu_gemv_tiny_floor_us;
    h.graph_node_us = p.cpu_op_us;
    h.prefill_gflops = p.cpu_prefill_gflops;
    return h;
}

// Measures the GPU half of `p` on `gpu`, through its registry entry.
void measure_gpu(HardwareProfile& p, Backend& gpu, bool quick, StepLog& steps) {
    const BackendEntry& entry = builtin_backends().get(gpu.name(), "the GPU backend");
    if (!entry.measure_rates) throw UnsupportedError(cat("cannot profile the GPU backend '", gpu.name(), "'"));
    DeviceRateOptions o;
    o.quick = quick;
    o.progress = std::ref(steps);
    o.host = host_rates(p);
    const DeviceRates g = entry.measure_rates(gpu, o);
    p.gpu_name = g.name;
    p.gpu_total_bytes = g.total_bytes;
    p.gpu_read_gbs = g.read_gbs;
    p.gpu_gemv_gbs = g.gemv_gbs;
    p.h2d_gbs = g.h2d_gbs;
    p.h2d_staged_gbs = g.h2d_staged_gbs;
    p.d2h_gbs = g.d2h_gbs;
    p.transfer_latency_us = g.transfer_latency_us;
    p.gpu_op_us = g.op_us;
    p.gpu_gemv_floor_us = g.gemv_floor_us;
    p.gpu_gemv_tiny_floor_us = g.gemv_tiny_floor_us;
    p.gpu_graph_node_us = g.graph_node_us;
    p.gpu_prefill_gflops = g.prefill_gflops;
}

void clear_gpu(HardwareProfile& p) {
    p.gpu_name.clear();
    p.gpu_total_bytes = 0;
    p.gpu_read_gbs = 0;
    p.gpu_gemv_gbs.clear();
    p.h2d_gbs = p.h2d_staged_gbs = p.d2h_gbs = p.transfer_latency_us = 0;
    p.gpu_op_us = p.gpu_gemv_floor_us = p.gpu_gemv_tiny_floor_us = p.gpu_graph_node_us = 0;
    p.gpu_attention_us.clear();
    p.gpu_attention_long_us.clear();
    p.gpu_prefill_gflops = 0;
}

std::string summary(const HardwareProfile& p) {
    std::string s = cat(p.cpu_threads, " threads: host read ", fixed(p.host_read_gbs, 1), " GB/s, disk ",
                        describe_disk(p), ", cpu op ", fixed(p.cpu_op_us, 1), " us");
    if (p.has_gpu()) {
        s += cat(", gpu read ", fixed(p.gpu_read_gbs, 1), " GB/s, h2d ", fixed(p.h2d_gbs, 1), " GB/s (staged ",
                 fixed(p.h2d_staged_gbs, 1), "), gpu op ",
                 fixed(p.gpu_op_us, 1), " us");
    }
    return s;
}

// The CPU measurements' options: full, or short on small buffers.
CpuProfileOptions cpu_options(bool quick, StepLog& steps) {
    CpuProfileOptions o;
    o.progress = std::ref(steps);
    if (quick) {
        o.budget_per_step = Seconds(0.02);
        o.gemv_bytes = 8ull << 20;
        o.disk.grid = {{4, 256ull << 10, 0}, {8, 1ull << 20, 0}};
        o.disk.point_bytes = 4ull << 20;
        o.disk.mmap_bytes = 16ull << 20;
        o.disk.budget = Seconds(0.5);
    }
    return o;
}

// Measures request.attention's shape on the CPU (and GPU) backend where `p` lacks it; whether
// it measured anything.
bool add_attention(HardwareProfile& p, const ProfileRequest& request, bool quick, StepLog& steps) {
    const std::string key = attention_key(request.attention);
    if (key.empty() || request.cpu == nullptr) return false;
    const Seconds budget = quick ? Seconds(0.01) : Seconds(0.1);
    bool measured = false;
    const auto both = [&](Backend& b, std::map<std::string, double>& short_us, std::map<std::string, double>& long_us) {
        short_us[key] = measure_attention_us(b, request.attention, kAttentionShortCells, budget);
        long_us[key] = measure_attention_us(b, request.attention, kAttentionLongCells, budget);
        measured = true;
    };
    if (!p.cpu_attention_us.count(key) || !p.cpu_attention_long_us.count(key)) {
        steps(cat("cpu attention ", key));
        both(*request.cpu, p.cpu_attention_us, p.cpu_attention_long_us);
    }
    if (request.gpu != nullptr && (!p.gpu_attention_us.count(key) || !p.gpu_attention_long_us.count(key))) {
        steps(cat("gpu attention ", key));
        both(*request.gpu, p.gpu_attention_us, p.gpu_attention_long_us);
    }
    return measured;
}

// Runs measure(type, name) for each of `types` that `b` can multiply and `rates` lacks, or
// holds from another kernel revision than b's (`revisions`: the profile's record of them, absent
// entries 1; null: none kept), as the step "<what> <name>"; records b's revision where
// `revisions` is kept. A type `measure` turns down (UnsupportedError) stays unrated. Whether it
// ran any.
bool measure_missing(const std::vector<GgmlType>& types, const std::map<std::string, double>& rates,
                     std::map<std::string, int>* revisions, const Backend& b, std::string_view what, StepLog& steps,
                     const std::function<void(GgmlType, const std::string&)>& measure) {
    bool measured = false;
    for (GgmlType type : types) {
        const std::string name(type_traits(type).name);
        if (!b.capabilities().runs_weight_type(type)) continue;
        const int revision = b.capabilities().kernel_revision(type);
        int measured_with = 1;
        if (revisions != nullptr) {
            if (const auto it = revisions->find(name); it != revisions->end()) measured_with = it->second;
        }
        const bool stale = revisions != nullptr && rates.contains(name) && measured_with != revision;
        if (rates.contains(name) && !stale) continue;
        steps(stale ? cat(what, " ", name, " (kernel revision ", revision, ", the profile's ", measured_with, ")")
                    : cat(what, " ", name));
        measured = true;
        try {
            measure(type, name);
            if (revisions != nullptr) (*revisions)[name] = revision;
        } catch (const UnsupportedError&) {
        }
    }
    return measured;
}

// Measures the GEMV rate of each of request.weight_types that `p` lacks on the CPU (and its
// prefill rate) and on the GPU backend, where they can multiply it; whether it measured any.
// A type left unrated keeps the cost model's fallback (a share of the read rate).
bool add_weight_types(HardwareProfile& p, const ProfileRequest& request, bool quick, StepLog& steps) {
    if (request.cpu == nullptr) return false;
    const CpuProfileOptions o = cpu_options(quick, steps);
    Backend& cpu = *request.cpu;
    bool measured = measure_missing(request.weight_types, p.cpu_gemv_gbs, &p.cpu_gemv_revisions, cpu, "cpu gemv", steps,
                                    [&](GgmlType type, const std::string& name) {
        p.cpu_gemv_gbs[name] = measure_cpu_gemv_gbs(cpu, type, {o.gemv_bytes, 1, o.budget_per_step});
        p.cpu_prefill_grid.by_type[name] =
            measure_cpu_prefill_gflops(cpu, type, {o.gemv_bytes, kPrefillBatch, o.budget_per_step / 2});
    });
    const BackendEntry* entry = request.gpu != nullptr ? builtin_backends().find(request.gpu->name()) : nullptr;
    if (entry == nullptr || !entry->measure_gemv || !p.has_gpu()) return measured;
    DeviceRateOptions d;
    d.quick = quick;
    d.host = host_rates(p);
    measured |= measure_missing(request.weight_types, p.gpu_gemv_gbs, nullptr, *request.gpu, "gpu gemv", steps,
                                [&](GgmlType type, const std::string& name) {
        p.gpu_gemv_gbs[name] = entry->measure_gemv(*request.gpu, type, d);
    });
    return measured;
}

// The threads the run's CPU backend uses; 0 when unknown (the profile's own count applies).
int run_threads(const ProfileRequest& request) {
    return request.cpu != nullptr ? request.cpu->capabilities().host_threads : 0;
}

// The CPU half measured on a CPU backend of `threads` threads (0: one per physical core).
HardwareProfile measure_cpu(const CpuProfileOptions& o, int threads) {
    const std::unique_ptr<Backend> cpu = builtin_backends().create("cpu", BackendConfig{0, threads}, "the profiler");
    return measure_cpu_profile(*cpu, o);
}

// `p` as the run sees it (at_threads of its CPU threads), measuring the CPU rates at that count,
// the model's attention and its weight types' GEMVs where `p` lacks them, kept in `p`;
// `measured` says whether any was.
HardwareProfile run_view(HardwareProfile& p, const ProfileRequest& request, bool quick, StepLog& steps,
                         bool& measured) {
    const int threads = run_threads(request);
    std::optional<HardwareProfile> view = at_threads(p, threads);
    if (!view) {
        steps(cat("cpu at ", threads, " threads"));
        p.cpu_at_threads[threads] = cpu_rates(measure_cpu(cpu_options(quick, steps), threads));
        view = at_threads(p, threads);
        measured = true;
    }
    const bool shapes = add_attention(*view, request, quick, steps);
    if (add_weight_types(*view, request, quick, steps) || shapes) {
        keep_view(p, *view);
        measured = true;
    }
    return *view;
}

// Saves `p`; says so with the rates the run uses (`view`, at its thread count).
void save(const HardwareProfile& p, const HardwareProfile& view, const std::string& path, std::ostream& log) {
    try {
        save_profile(p, path);
        log << "hardware profile saved to " << path << ": " << summary(view) << "\n";
    } catch (const SystemError& e) {
        log << "hardware profile not saved (" << e.what() << "): " << summary(view) << "\n";
    }
}


}  // namespace

std::string gpu_device_name(const Backend* gpu) {
    return gpu != nullptr ? gpu->capabilities().device_name : std::string();
}

std::optional<HardwareProfile> cached_profile(const Backend* gpu, int threads) {
    try {
        const std::string path = default_profile_path();
        if (!std::filesystem::exists(path)) return std::nullopt;
        HardwareProfile p = load_profile(path);
        if (p.cpu_name != cpu_model_name()) return std::nullopt;
        if (gpu != nullptr && p.gpu_name != gpu_device_name(gpu)) return std::nullopt;
        return at_threads(p, threads);
    } catch (const Error&) {
        return std::nullopt;
    }
}

HardwareProfile load_or_measure_profile(const ProfileRequest& request, std::ostream& log) {
    const std::string path = default_profile_path();
    const std::string gpu_name = gpu_device_name(request.gpu);
    const std::string cpu_name = cpu_model_name();
    const bool quick = request.quick || quick_from_env();

    std::optional<HardwareProfile> cached;
    std::string why;  // empty: no profile yet
    if (request.reprofile) {
        why = "--reprofile";
    } else if (std::filesystem::exists(path)) {
        try {
            cached = load_profile(path);
        } catch (const Error& e) {  // FormatError (corrupt), SystemError (unreadable)
            why = e.what();
        }
    }
    if (cached && !profile_matches(*cached, cached->gpu_name, cpu_name)) {
        why = cat("the profile at ", path, " is of CPU '", cached->cpu_name, "', this is '", cpu_name, "'");
        cached.reset();
    }
    // Without a GPU backend the GPU half is not used: any GPU it records will do.
    if (cached && (gpu_name.empty() || cached->gpu_name == gpu_name)) {
        StepLog steps{log, request.on_step};
        bool measured = false;
        HardwareProfile view = run_view(*cached, request, quick, steps, measured);
        steps.end();
        if (measured) {
            if (!steps.first) log << "\n";
            save(*cached, view, path, log);
        }
        return view;
    }

    const auto t0 = std::chrono::steady_clock::now();
    StepLog steps{log, request.on_step};
    HardwareProfile p;
    if (cached) {
        log << "measuring GPU '" << gpu_name << "': the profile at " << path << " has "
            << (cached->gpu_name.empty() ? "no GPU" : cat("'", cached->gpu_name, "'")) << "\n";
        p = *cached;
    } else {
        if (why.empty()) {
            log << "measuring this machine for the planner (no hardware profile at " << path << " yet)\n";
        } else {
            log << "re-profiling: " << why << "\n";
        }
        const CpuProfileOptions o = cpu_options(quick, steps);
        // A busy machine measures too slow: wait a little for it to calm down, then say so.
        double busy = busy_cpu_share();
        for (int i = 0; i < 3 && busy >= kBusyShare; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            busy = busy_cpu_share();
        }
        p = measure_cpu(o, 0);
        if (const std::string note = busy_machine_note(std::max(busy, busy_cpu_share(std::chrono::milliseconds(100))));
            !note.empty()) {
            log << "\nnote: " << note << "\n";
            steps.first = true;
        }
        steps("disk read");
        try {
            set_disk(p, measure_disk_read_gbs(request.model_path, o.disk));
        } catch (const SystemError& e) {
            log << "\ncannot measure the disk (" << e.what() << "): DISK counts as very slow\n";
            p.disk_read_gbs = kUnmeasuredDiskGbs;
            steps.first = true;
        }
    }
    clear_gpu(p);
    if (request.gpu != nullptr) measure_gpu(p, *request.gpu, quick, steps);
    bool measured = false;
    const HardwareProfile view = run_view(p, request, quick, steps, measured);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!steps.first) log << " (" << fixed(seconds, 1) << " s)\n";
    steps.end();
    save(p, view, path, log);
    return view;
}

}  // namespace strata
