// ActivationObserver: a hook through which a calibration run (`strata profile`,
// profile_run.h) sees the activations of the forward pass. The layer program calls it, when one
// is set, with host tensors [ne0, n_tokens] of the current batch: the FFN's gate before its
// activation (site FfnGateAct: the observer applies the activation), and the input of each
// weight matrix. Only for models whose every weight is on a host backend.
#pragma once

#include <cstdint>

#include "engine/core/tensor.h"
#include "predictor/activation_profile.h"

namespace strata {

// Host views, valid during the call: the router's logits [n_expert, n_tokens] (token-major rows)
// and each token's top-k experts, highest probability first [n_tokens * n_used].
struct RoutingView {
    const float* logits = nullptr;
    const int32_t* experts = nullptr;
    int64_t n_tokens = 0, n_expert = 0, n_used = 0;
};

class ActivationObserver {
  public:
    virtual ~ActivationObserver() = default;
    virtual void observe(int layer, ActivationSite site, const Tensor& values) = 0;
    // A mixture-of-experts layer's routing of the batch (on every backend: routing is on the host).
    virtual void observe_routing(int /*layer*/, const RoutingView& /*routing*/) {}
};

}  // namespace strata
