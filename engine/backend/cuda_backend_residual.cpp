// CUDA backend: the residual add and global average pooling with our kernels
// (kernels/cuda/residual.cu). The argument checks are the CPU backend's (backend_checks), so a
// layer fails the same way on either; the results agree with the CPU bit for bit. The add is
// elementwise (its operands share a format: checks::add); pooling reads a channels-last map
// through the NHWC launchers, in the same order.
#include "engine/backend/backend_checks.h"
#include "engine/backend/cuda_backend.h"
#include "kernels/cuda/image_kernels.h"

namespace amp {

using cudabk::floatCode;

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  useDevice();
  checks::add(a, b, y);
  cuda::launchAdd(floatCode(a, "add"), a.rawData(), floatCode(b, "add"), b.rawData(),
                  floatCode(y, "add"), y.rawData(), y.numel(), stream());
  checkLaunch("add", cudabk::shapes({&a, &b, &y}));
}

void CudaBackend::globalAvgPoolForward(const Tensor& x, Tensor& y) {
  useDevice();
  const auto d = checks::globalAvgPool(x, y, "adaptive_avg_pool2d");
  if (x.channelsLast()) {
    cuda::launchGlobalAvgPoolForwardNhwc(floatCode(x, "adaptive_avg_pool2d"), x.rawData(),
                                         floatCode(y, "adaptive_avg_pool2d"), y.rawData(),
                                         x.dim(0), x.dim(1), d.planeSize, stream());
    return checkLaunch("adaptive_avg_pool2d", cudabk::shapes({&x, &y}) + ", channels-last");
  }
  cuda::launchGlobalAvgPoolForward(floatCode(x, "adaptive_avg_pool2d"), x.rawData(),
                                   floatCode(y, "adaptive_avg_pool2d"), y.rawData(), d.planes,
                                   d.planeSize, stream());
  checkLaunch("adaptive_avg_pool2d", cudabk::shapes({&x, &y}));
}

void CudaBackend::globalAvgPoolBackward(const Tensor& dy, Tensor& dx) {
  useDevice();
  const auto d = checks::globalAvgPool(dx, dy, "adaptive_avg_pool2d backward");
  if (dx.channelsLast()) {
    cuda::launchGlobalAvgPoolBackwardNhwc(floatCode(dy, "adaptive_avg_pool2d backward"),
                                          dy.rawData(), floatCode(dx, "adaptive_avg_pool2d backward"),
                                          dx.rawData(), dx.dim(0), dx.dim(1), d.planeSize, stream());
    return checkLaunch("adaptive_avg_pool2d backward",
                       cudabk::shapes({&dy, &dx}) + ", channels-last");
  }
  cuda::launchGlobalAvgPoolBackward(floatCode(dy, "adaptive_avg_pool2d backward"), dy.rawData(),
                                    floatCode(dx, "adaptive_avg_pool2d backward"), dx.rawData(),
                                    d.planes, d.planeSize, stream());
  checkLaunch("adaptive_avg_pool2d backward", cudabk::shapes({&dy, &dx}));
}

}  // namespace amp
