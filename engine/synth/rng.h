// Small deterministic random numbers for synthetic models: SplitMix64 (fast, 64 bits per
// call, any seed is fine) and a helper to derive independent streams from a seed and keys.
#pragma once

#include <cstdint>
#include <string_view>

namespace strata {

class Rng {
  public:
    explicit Rng(uint64_t seed) : state_(seed) {}

    uint64_t next() {
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, n) for small n (bias below 2^-32 for n < 2^32).
    uint32_t below(uint32_t n) { return static_cast<uint32_t>(((next() >> 32) * n) >> 32); }
    // Uniform in [0, 1).
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  private:
    uint64_t state_;
};

// Mixes a key into a seed so that streams for different keys are independent.
inline uint64_t mix_seed(uint64_t seed, uint64_t key) {
    Rng rng(seed ^ (key * 0xD1B54A32D192ED03ull));
    return rng.next();
}

// FNV-1a of a name, for per-tensor streams.
inline uint64_t name_hash(std::string_view name) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (char c : name)
        h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
    return h;
}

}  // namespace strata
