// Activations forward and backward with the CPU's per-element math (activation_math.h). ReLU and
// GELU (its erf and exp are activation_math.h's own, multiplies, adds and bit selects, and this
// code is built with --fmad=false) are the CPU's bits; tanh and sigmoid use CUDA's libdevice,
// within the bound the op tests state.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void activationForwardKernel(Activation a, int xCode, const void* x, int yCode, void* y,
                                        std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    storeFloat(yCode, y, i, activate(a, loadFloat(xCode, x, i)));
}

__global__ void activationBackwardKernel(Activation a, int vCode, const void* x, const void* y,
                                         int gCode, const void* dy, int dCode, void* dx,
                                         std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float yi = loadFloat(vCode, y, i), gi = loadFloat(gCode, dy, i);
    const float out = a == Activation::ReLU
                          ? reluBackward(yi, gi)
                          : gi * activationDerivative(a, loadFloat(vCode, x, i), yi);
    storeFloat(dCode, dx, i, out);
  }
}

void launchActivationForward(Activation a, int xCode, const void* x, int yCode, void* y,
                             std::int64_t n, Stream s) {
  if (n > 0) activationForwardKernel<<<gridFor(n), kBlock, 0, s>>>(a, xCode, x, yCode, y, n);
}

void launchActivationBackward(Activation a, int vCode, const void* x, const void* y, int gCode,
                              const void* dy, int dCode, void* dx, std::int64_t n, Stream s) {
  if (n > 0)
    activationBackwardKernel<<<gridFor(n), kBlock, 0, s>>>(a, vCode, x, y, gCode, dy, dCode, dx, n);
}

}  // namespace amp::cuda
