// Environment variables that switch a behaviour for A/B measurements (STRATA_CUDA_PDL=0,
// STRATA_CPU_OP_TIMES=1, STRATA_SHIP_OVERLAP=0, ...). Callers cache the answer in a
// function-local static: the environment is read once per process.
#pragma once

#include <cstdlib>
#include <string_view>

namespace strata {

// A default-on behaviour: off only when `name` is set to "0".
inline bool env_turned_off(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && std::string_view(v) == "0";
}

// A default-off behaviour: on when `name` is set to anything but "" or "0".
inline bool env_turned_on(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

}  // namespace strata
