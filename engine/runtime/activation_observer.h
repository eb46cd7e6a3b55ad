// ActivationObserver: a hook through which a calibration run (`strata profile`,
// profile_run.h) sees the activations of the forward pass. The layer program calls it, when one
// is set, with host tensors [ne0, n_tokens] of the current batch: the FFN's gate before its
// activation (site FfnGateAct: the observer applies the activation), and the input of each
// weight matrix. Only for models whose every weight is on a host backend.
#pragma once

#include "engine/core/tensor.h"
#include "predictor/activation_profile.h"

namespace strata {

class ActivationObserver {
  public:
    virtual ~ActivationObserver() = default;
    virtual void observe(int layer, ActivationSite site, const Tensor& values) = 0;
};

}  // namespace strata
