// CUDA backend: convolutions, pooling and batch norm arrive with part 2 (issue 11, cuDNN). Until
// then they refuse with a message the user can act on; the CNN presets are refused up front
// (engine/backend/backend_registry.cpp) so a run never gets this far.
#include <stdexcept>

#include "engine/backend/cuda_backend.h"

namespace amp {

namespace {
[[noreturn]] void notYet(const char* op) {
  throw std::runtime_error(std::string(op) +
                           " is not supported on the CUDA backend yet (issue 11); use backend=cpu");
}
}  // namespace

void CudaBackend::conv2dForward(const Tensor&, const Tensor&, const Tensor*, Tensor&,
                                const Conv2dGeometry&) { notYet("conv2d"); }
void CudaBackend::conv2dBackwardData(const Tensor&, const Tensor&, Tensor&,
                                     const Conv2dGeometry&) { notYet("conv2d backward"); }
void CudaBackend::conv2dBackwardWeights(const Tensor&, const Tensor&, Tensor&, Tensor*,
                                        const Conv2dGeometry&) { notYet("conv2d backward"); }
void CudaBackend::maxPool2dForward(const Tensor&, Tensor&, Tensor&, const Pool2dGeometry&) {
  notYet("max pooling");
}
void CudaBackend::maxPool2dBackward(const Tensor&, const Tensor&, Tensor&, const Pool2dGeometry&) {
  notYet("max pooling");
}
void CudaBackend::batchNormForwardTrain(const Tensor&, const Tensor&, const Tensor&, Tensor&,
                                        Tensor&, float, float, Tensor&, Tensor&, Tensor&) {
  notYet("batch norm");
}
void CudaBackend::batchNormForwardEval(const Tensor&, const Tensor&, const Tensor&,
                                       const Tensor&, const Tensor&, float, Tensor&) {
  notYet("batch norm");
}
void CudaBackend::batchNormBackward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                    const Tensor&, Tensor&, Tensor&, Tensor&) {
  notYet("batch norm");
}

}  // namespace amp
