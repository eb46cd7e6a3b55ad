// Backends by name (backend_registry.h), and BackendCapabilities' helpers (backend.h).
#include "engine/core/backend_registry.h"

#include <algorithm>

#include "engine/core/error.h"

namespace strata {

bool BackendCapabilities::runs_weight_type(GgmlType type) const {
    return std::find(weight_types.begin(), weight_types.end(), type) != weight_types.end();
}

int BackendCapabilities::kernel_revision(GgmlType type) const {
    const auto it = kernel_revisions.find(type);
    return it != kernel_revisions.end() ? it->second : 1;
}

std::vector<GgmlType> reference_weight_types() {
    std::vector<GgmlType> types;
    for (uint32_t id = 0; id < 64; ++id) {
        const TypeTraits* t = find_type_traits(id);
        if (t != nullptr && t->dequantize != nullptr) types.push_back(t->type);
    }
    return types;
}

void BackendRegistry::add(BackendEntry entry) {
    if (find(entry.name) != nullptr) throw ArgumentError(cat("backend '", entry.name, "' is registered twice"));
    if (!entry.create) throw ArgumentError(cat("backend '", entry.name, "' is registered without a factory"));
    entries_.push_back(std::move(entry));
}

const BackendEntry* BackendRegistry::find(std::string_view name) const {
    for (const BackendEntry& e : entries_) {
        if (e.name == name) return &e;
    }
    return nullptr;
}

std::string BackendRegistry::names(bool devices_only) const {
    std::string out;
    for (const BackendEntry& e : entries_) {
        if (devices_only && !e.is_device) continue;
        out += cat(out.empty() ? "" : ", ", e.name);
    }
    return out;
}

const BackendEntry& BackendRegistry::get(std::string_view name, std::string_view flag) const {
    if (const BackendEntry* e = find(name)) return *e;
    throw UnsupportedError(cat(flag, " ", name, ": this strata has no backend '", name, "'; it has: ", names()));
}

std::unique_ptr<Backend> BackendRegistry::create(std::string_view name, const BackendConfig& config,
                                                 std::string_view flag) const {
    const BackendEntry& e = get(name, flag);
    if (e.unavailable) {
        if (const std::string why = e.unavailable(); !why.empty()) {
            throw SystemError(cat(flag, " ", name, ": ", why, " (backends in this strata: ", names(), ")"));
        }
    }
    return e.create(config);
}

}  // namespace strata
