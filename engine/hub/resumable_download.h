// A download that survives interruption: bytes go to "<target>.part" (never to the target),
// a later call resumes from the part's size with an HTTP Range request, and only a complete file
// (its size checked against the server's and the caller's) is renamed over the target, fsynced.
// Two processes cannot write the same part at once (an flock on it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/hub/http_get.h"

namespace strata {

struct DownloadRequest {
    HttpRequest http;          // url, token, timeout (its range is set here)
    std::string target;        // the final path
    int64_t expected_size = -1;  // from the hub's file list; -1: unknown
    // Called as bytes arrive (done includes the resumed part); total is -1 when unknown.
    std::function<void(uint64_t done, int64_t total)> on_progress;
};

struct DownloadResult {
    uint64_t bytes = 0;          // size of the complete file
    uint64_t resumed_from = 0;   // bytes the part file already held
    bool already_there = false;  // the target existed with the expected size
};

// Throws SystemError when the transfer breaks (the part file stays; calling again resumes),
// HttpStatusError for a refused request, FormatError when the sizes disagree.
DownloadResult download_resumable(const DownloadRequest& request);

// "<target>.part".
std::string part_path_for(const std::string& target);

}  // namespace strata
