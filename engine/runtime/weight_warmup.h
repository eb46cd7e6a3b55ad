// Reading the RAM tier's weights in before the first token: they are views of the model's file
// mapping, so without this the first prompt pays for every page fault (seconds on a cold cache)
// with nothing said. Runtime calls it when a load progress callback is given, so the read shows.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace strata {

class Model;
struct Placement;

// Called with bytes read so far of the total to read; from the calling thread.
using WarmupProgress = std::function<void(uint64_t done, uint64_t total)>;

// Touches one byte per page of every tensor `placement` keeps in RAM (the mapping's pages are
// then resident, as the RAM tier promises). Returns the bytes touched.
uint64_t warm_up_ram_weights(const Model& model, const Placement& placement, const WarmupProgress& progress);

}  // namespace strata
