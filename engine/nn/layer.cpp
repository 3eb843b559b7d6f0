#include "engine/nn/layer.h"

namespace amp {

void accumulateGrad(Backend& be, Parameter& p, Tensor computed) {
  if (!p.grad.defined()) {
    p.grad = computed.dtype() == p.value.dtype()
                 ? std::move(computed)
                 : be.cast(computed, p.value.dtype(), MemCategory::Gradients);
    return;
  }
  be.accumulate(p.grad, computed);
}

Tensor castActivation(Backend& be, const Tensor& x, DType to, int& casts) {
  if (x.dtype() == to) return x;
  ++casts;
  return be.cast(x, to, MemCategory::Activations);
}

}  // namespace amp
