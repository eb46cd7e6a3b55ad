// The placers' tensor classes (tensor_class.h).
#include "offload/tensor_class.h"

#include <algorithm>

namespace strata {

TensorClasses classify_tensors(const TensorTable& table) {
    TensorClasses c;
    const size_t n = table.tensors.size();
    const int n_layer = std::max(table.n_layer, 0);
    c.of.assign(n, TensorClass::GlobalOther);
    c.layer.assign(n, -1);
    c.ffn.resize(static_cast<size_t>(n_layer));
    for (int layer = 0; layer < n_layer; ++layer) c.ffn[static_cast<size_t>(layer)] = find_ffn_tensors(table, layer);
    const bool has_output = std::any_of(table.tensors.begin(), table.tensors.end(),
                                        [](const TensorEntry& t) { return t.role() == TensorRole::Output; });
    for (size_t i = 0; i < n; ++i) {
        const TensorEntry& t = table.tensors[i];
        const auto [role, layer] = tensor_name_info(t.name);
        const bool in_block = layer >= 0 && layer < n_layer;
        if (in_block) c.layer[i] = layer;
        TensorClass& cls = c.of[i];
        if (t.ne[1] == 1 && t.ne[2] == 1 && t.ne[3] == 1) {
            cls = TensorClass::Small;
        } else if (role == TensorRole::Output) {
            cls = TensorClass::Output;
            c.output = static_cast<int>(i);
        } else if (role == TensorRole::TokenEmbd) {
            cls = has_output ? TensorClass::TokenEmbd : TensorClass::Output;
            c.token_embd = static_cast<int>(i);
        } else if (in_block) {
            const auto& ffn = c.ffn[static_cast<size_t>(layer)];
            if (ffn && (&t == ffn->gate || &t == ffn->up || &t == ffn->down)) {
                cls = TensorClass::Ffn;
            } else if (is_attention_role(role)) {
                cls = TensorClass::Attn;
            } else {
                cls = TensorClass::LayerOther;
            }
        }
    }
    return c;
}

}  // namespace strata
