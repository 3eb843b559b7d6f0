// The two ops residual networks add to a CNN, as the CPU backend computes them
// (engine/backend/cpu_backend_residual.cpp), bit for bit:
// - the residual add: y = a + b with each input widened exactly and the fp32 sum rounded once
//   to y's dtype (PyTorch's add with type promotion);
// - global average pooling (adaptive_avg_pool2d to 1x1): one thread per (n, c) plane sums it in
//   fp32 in row-major order, as the CPU does, and divides by the plane's size; the backward
//   spreads dy / (H*W) over the plane.
// The planes at the end of a ResNet are small (8x8 for CIFAR, 7x7 for ImageNet sizes) and many,
// so a thread per plane keeps the order fixed at no real cost. Channels-last (NHWC) inputs walk
// each plane in the same position order (kernels/common/image_layout.h): the same bits, and
// neighbouring threads (channels) then read neighbouring addresses.
#include "kernels/common/image_layout.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/image_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

__global__ void addKernel(int aCode, const void* a, int bCode, const void* b, int yCode, void* y,
                          std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    storeFloat(yCode, y, i, loadFloat(aCode, a, i) + loadFloat(bCode, b, i));
}

// channels: C, only read for an NHWC x (plane p = n * C + c).
__global__ void globalAvgPoolForwardKernel(int xCode, const void* x, int yCode, void* y,
                                           std::int64_t planes, std::int64_t planeSize,
                                           bool nhwc, std::int64_t channels) {
  const float count = static_cast<float>(planeSize);
  for (std::int64_t p = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; p < planes;
       p += std::int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.f;
    for (std::int64_t i = 0; i < planeSize; ++i)
      sum += loadFloat(xCode, x, planeOffset(nhwc, p, i, channels, planeSize));
    storeFloat(yCode, y, p, sum / count);
  }
}

__global__ void globalAvgPoolBackwardKernel(int dyCode, const void* dy, int dxCode, void* dx,
                                            std::int64_t planes, std::int64_t planeSize,
                                            bool nhwc, std::int64_t channels) {
  const float count = static_cast<float>(planeSize);
  const std::int64_t total = planes * planeSize;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t plane = 0, position = 0;
    planeAndPositionAt(nhwc, e, channels, planeSize, plane, position);
    storeFloat(dxCode, dx, e, loadFloat(dyCode, dy, plane) / count);
  }
}

void launchAdd(int aCode, const void* a, int bCode, const void* b, int yCode, void* y,
               std::int64_t n, Stream s) {
  if (n > 0) addKernel<<<gridFor(n), kBlock, 0, s>>>(aCode, a, bCode, b, yCode, y, n);
}

void launchGlobalAvgPoolForward(int xCode, const void* x, int yCode, void* y,
                                std::int64_t planes, std::int64_t planeSize, Stream s) {
  if (planes > 0 && planeSize > 0)
    globalAvgPoolForwardKernel<<<gridFor(planes), kBlock, 0, s>>>(xCode, x, yCode, y, planes,
                                                                  planeSize, false, 1);
}

void launchGlobalAvgPoolBackward(int dyCode, const void* dy, int dxCode, void* dx,
                                 std::int64_t planes, std::int64_t planeSize, Stream s) {
  if (planes > 0 && planeSize > 0)
    globalAvgPoolBackwardKernel<<<gridFor(planes * planeSize), kBlock, 0, s>>>(
        dyCode, dy, dxCode, dx, planes, planeSize, false, 1);
}

void launchGlobalAvgPoolForwardNhwc(int xCode, const void* x, int yCode, void* y, std::int64_t n,
                                    std::int64_t c, std::int64_t planeSize, Stream s) {
  const std::int64_t planes = n * c;
  if (planes > 0 && planeSize > 0)
    globalAvgPoolForwardKernel<<<gridFor(planes), kBlock, 0, s>>>(xCode, x, yCode, y, planes,
                                                                  planeSize, true, c);
}

void launchGlobalAvgPoolBackwardNhwc(int dyCode, const void* dy, int dxCode, void* dx,
                                     std::int64_t n, std::int64_t c, std::int64_t planeSize,
                                     Stream s) {
  const std::int64_t planes = n * c;
  if (planes > 0 && planeSize > 0)
    globalAvgPoolBackwardKernel<<<gridFor(planes * planeSize), kBlock, 0, s>>>(
        dyCode, dy, dxCode, dx, planes, planeSize, true, c);
}

}  // namespace amp::cuda
