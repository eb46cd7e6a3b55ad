// Placement rules from the command line (placement_rules.h).
#include "offload/placement_rules.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "engine/core/error.h"

namespace strata {
namespace {

struct CompiledRule {
    std::regex re;
    Pin pin;
};

std::vector<CompiledRule> compile(const std::vector<TensorRule>& rules) {
    std::vector<CompiledRule> out;
    for (const TensorRule& r : rules) {
        try {
            out.push_back({std::regex(r.pattern, std::regex::ECMAScript), r.on_gpu ? Pin::Gpu : Pin::OffGpu});
        } catch (const std::regex_error& e) {
            throw ArgumentError(cat("-ot: '", r.pattern, "' is not a valid regular expression (", e.what(), ")"));
        }
    }
    return out;
}

Pin layer_pin(const std::string& name, int n_layer, int gpu_layers) {
    if (gpu_layers < 0) return Pin::Free;
    const int layer = tensor_layer(name);
    if (layer >= 0) return layer < gpu_layers ? Pin::Free : Pin::OffGpu;
    return gpu_layers > n_layer ? Pin::Free : Pin::OffGpu;
}

// A layer's FFN tensors take one pin: the one a rule gave any of them.
void unify_ffn(const TensorTable& table, std::vector<Pin>& pins, const std::vector<bool>& by_rule) {
    for (int layer = 0; layer < table.n_layer; ++layer) {
        const std::optional<FfnTensors> f = find_ffn_tensors(table, layer);
        if (!f) continue;
        std::vector<size_t> idx;
        for (const TensorEntry* t : {f->gate, f->up, f->down}) idx.push_back(static_cast<size_t>(t - table.tensors.data()));
        Pin chosen = Pin::Free;
        for (size_t i : idx) {
            if (!by_rule[i]) continue;
            if (chosen != Pin::Free && chosen != pins[i]) {
                throw ArgumentError(cat("-ot: the rules put some FFN tensors of layer ", layer,
                                        " on the GPU and others off it; a layer's ffn_gate, ffn_up and ffn_down"
                                        " share one tier"));
            }
            chosen = pins[i];
        }
        if (chosen == Pin::Free) {
            // -ngl alone: the three share their layer's pin already.
            continue;
        }
        for (size_t i : idx) pins[i] = chosen;
    }
}

}  // namespace

ResolvedRules resolve_rules(const TensorTable& table, const PlacementRules& rules) {
    ResolvedRules r;
    if (rules.empty()) return r;
    const std::vector<CompiledRule> compiled = compile(rules.tensors);
    r.tensor.assign(table.tensors.size(), Pin::Free);
    std::vector<bool> by_rule(table.tensors.size(), false);
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        const std::string& name = table.tensors[i].name;
        r.tensor[i] = layer_pin(name, table.n_layer, rules.gpu_layers);
        for (const CompiledRule& c : compiled) {
            if (std::regex_search(name, c.re)) {
                r.tensor[i] = c.pin;
                by_rule[i] = true;
                break;
            }
        }
    }
    unify_ffn(table, r.tensor, by_rule);
    r.kv_gpu_ok.assign(static_cast<size_t>(std::max(table.n_layer, 0)), true);
    for (int layer = 0; layer < table.n_layer; ++layer) {
        r.kv_gpu_ok[static_cast<size_t>(layer)] = rules.gpu_layers < 0 || layer < rules.gpu_layers;
    }
    return r;
}

std::vector<TensorRule> parse_tensor_rules(std::string_view text) {
    std::vector<TensorRule> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string_view item = text.substr(start, comma - start);
        const size_t eq = item.rfind('=');
        if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
            throw ArgumentError(cat("-ot: '", item, "' is not REGEX=DEVICE (e.g. \"ffn_.*=CPU\")"));
        }
        std::string device(item.substr(eq + 1));
        std::transform(device.begin(), device.end(), device.begin(), [](unsigned char c) { return std::toupper(c); });
        const bool cuda = device.rfind("CUDA", 0) == 0 &&
                          device.find_first_not_of("0123456789", 4) == std::string::npos;
        if (device != "CPU" && device != "GPU" && !cuda) {
            throw ArgumentError(cat("-ot: unknown device '", item.substr(eq + 1),
                                    "' (CPU keeps the tensors off the GPU; GPU, CUDA or CUDA0 puts them on it)"));
        }
        out.push_back({std::string(item.substr(0, eq)), device != "CPU"});
        start = comma + 1;
    }
    return out;
}

uint64_t pinned_gpu_bytes(const TensorTable& table, const ResolvedRules& rules) {
    uint64_t bytes = 0;
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        if (rules.on_gpu(i)) bytes += table.tensors[i].bytes;
    }
    return bytes;
}

}  // namespace strata
