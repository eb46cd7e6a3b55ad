// This machine's HardwareProfile for the planner: read from the per-user cache
// (default_profile_path()), measured again — CPU, RAM and disk (offload/), and the GPU backend in
// use (through its registry entry's measure_rates: the CUDA device, or rates derived from the CPU's
// for the fake device) — when the cache is missing, unreadable or of other hardware, and saved back.
//
// STRATA_QUICK_PROFILE=1 in the environment (or ProfileRequest::quick) measures each rate briefly
// on small buffers: a rough profile in about a second, for tests and CI. It is cached like a
// full one; --reprofile replaces it.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/core/backend.h"
#include "offload/hardware_profile.h"

namespace strata {

struct ProfileRequest {
    Backend* gpu = nullptr;   // the run's GPU backend (CUDA or the fake device); null: none
    std::string model_path;   // the disk rate is measured on its file system
    bool reprofile = false;   // measure even when the cache matches
    bool quick = false;       // short measurements (as STRATA_QUICK_PROFILE=1)
    // The model's attention: measured on `cpu` (and `gpu`) when the profile lacks its shape,
    // and saved with it. Nothing when the shape is incomplete or `cpu` is null.
    AttentionShape attention;
    // The model's weight matrix types: each the profile has no GEMV rate for is measured on
    // `cpu` (with its prefill rate) and on `gpu`, where they can multiply it, and saved with it.
    std::vector<GgmlType> weight_types;
    // The run's CPU backend: the profile is returned at its thread count (capabilities().host_threads).
    Backend* cpu = nullptr;
    // Called before each measurement ("host read", "cpu gemv q4_K", "disk read" ...) instead of
    // listing them on the log (a progress bar draws them), and with "" once after the last one,
    // before anything more is said on the log. Empty: they go to the log.
    std::function<void(std::string_view step)> on_step;
};

// The name a profile records for `gpu` (its capabilities().device_name: the CUDA device's name,
// "fake-gpu" for the fake device), "" for none.
std::string gpu_device_name(const Backend* gpu);

// The cached profile when it is readable, of this CPU and (when `gpu` is given) of this GPU,
// as a run with `threads` CPU threads sees it (at_threads; 0: the profile's own count);
// nullopt otherwise, or when that count is not measured. Measures nothing, prints nothing.
std::optional<HardwareProfile> cached_profile(const Backend* gpu, int threads = 0);

// The cached profile, or a new one measured and saved when the cache is missing, corrupt
// (FormatError: "re-profiling: <reason>"), of another CPU, lacks this GPU, or `reprofile` is
// set. A cached profile of this CPU keeps its CPU half when only the GPU is measured; with no
// GPU backend, a cached profile of this CPU is used whatever GPU it records. The CPU is measured
// with one thread per physical core. Says on `log` what it measures and where it saves.
// Returns the profile as request.cpu's thread count sees it (at_threads): a count the profile
// lacks has its CPU rates measured (a few seconds, once per count and machine) and saved in
// cpu_at_threads. A profile used as it is still gets the attention of request.attention's
// shape measured on request.cpu and saved when it lacks it (a fraction of a second, once per
// shape, thread count and machine), and so are the GEMV rates of request.weight_types it lacks
// (an i-quant, say: about a second each, once per type, thread count and machine).
// The disk rate is 0 when the model's folder cannot be measured, and the profile is used unsaved
// when the cache cannot be written (both said on `log`); other errors of the measurements pass
// through.
HardwareProfile load_or_measure_profile(const ProfileRequest& request, std::ostream& log);

}  // namespace strata
