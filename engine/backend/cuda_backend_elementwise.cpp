// CUDA backend: activations and dropout, through the kernels that share the CPU's element math.
// Operands of one call share a memory format (elementwise work is then order-free); dropout's
// mask is drawn by logical index, so a channels-last input runs on NCHW copies.
#include <stdexcept>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cuda_backend.h"

namespace amp {

using cudabk::floatCode;

void CudaBackend::activationForward(Activation a, const Tensor& x, Tensor& y) {
  useDevice();
  cudabk::requireSameSize(x, y, "activation");
  checks::sameFormat({&x, &y}, "activation");
  cuda::launchActivationForward(a, floatCode(x, "activation"), x.rawData(),
                                floatCode(y, "activation"), y.rawData(), x.numel(), m_stream);
  checkLaunch("activation forward", cudabk::shapes({&x, &y}));
}

void CudaBackend::activationBackward(Activation a, const Tensor& x, const Tensor& y,
                                     const Tensor& dy, Tensor& dx) {
  useDevice();
  cudabk::requireSameSize(y, dy, "activation backward");
  cudabk::requireSameSize(dy, dx, "activation backward");
  if (x.dtype() != y.dtype()) throw std::invalid_argument("activation backward: x/y dtypes");
  checks::sameFormat({&x, &y, &dy, &dx}, "activation backward");
  cuda::launchActivationBackward(a, floatCode(y, "activation backward"), x.rawData(), y.rawData(),
                                 floatCode(dy, "activation backward"), dy.rawData(),
                                 floatCode(dx, "activation backward"), dx.rawData(), dy.numel(),
                                 m_stream);
  checkLaunch("activation backward", cudabk::shapes({&x, &dy, &dx}));
}

void CudaBackend::dropoutForward(const Tensor& x, Tensor& mask, Tensor& y, float p,
                                 std::uint64_t seed) {
  useDevice();
  refuseWhileCapturing("dropout (a new mask every step)");
  if (mask.dtype() != DType::U8) throw std::invalid_argument("dropout: mask must be uint8");
  cudabk::requireSameSize(x, y, "dropout");
  cudabk::requireSameSize(x, mask, "dropout");
  if (!(p >= 0.f && p < 1.f)) throw std::invalid_argument("dropout: p must be in [0, 1)");
  if (x.dtype() != y.dtype()) throw std::invalid_argument("dropout: x and y differ in dtype");
  if (checks::sameFormat({&x, &mask, &y}, "dropout") == MemoryFormat::ChannelsLast) {
    // The mask hangs on the logical (NCHW) index, as on the CPU: the same elements drop in
    // either format. Rare in practice (dropout after a convolution), so plain copies.
    const Tensor xc = contiguous(x);
    Tensor maskc = empty(mask.shape(), mask.dtype(), MemCategory::Workspace);
    Tensor yc = empty(y.shape(), y.dtype(), MemCategory::Workspace);
    dropoutForward(xc, maskc, yc, p, seed);
    convertFormatInto(maskc, mask);
    convertFormatInto(yc, y);
    return;
  }
  cuda::launchDropoutForward(floatCode(x, "dropout"), x.rawData(), mask.data<std::uint8_t>(),
                             y.rawData(), x.numel(), p, seed, m_stream);
  checkLaunch("dropout forward", cudabk::shapes({&x}));
}

void CudaBackend::dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx, float p) {
  useDevice();
  cudabk::requireSameSize(dy, dx, "dropout backward");
  if (dy.dtype() != dx.dtype()) throw std::invalid_argument("dropout backward: dtypes differ");
  checks::sameFormat({&dy, &mask, &dx}, "dropout backward");  // then the mask lines up
  cuda::launchDropoutBackward(floatCode(dy, "dropout backward"), dy.rawData(),
                              mask.data<std::uint8_t>(), dx.rawData(), dy.numel(), p, m_stream);
  checkLaunch("dropout backward", cudabk::shapes({&dy}));
}

}  // namespace amp
