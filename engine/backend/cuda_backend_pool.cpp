// CUDA backend: max pooling with our kernels (kernels/cuda/max_pool.cu), padded or not. Validation and its
// messages are the CPU backend's (cpu_backend_conv.cpp), so a layer fails the same way on
// either; values, argmax and gradients agree with the CPU bit for bit, in NCHW or channels-last
// (every activation of a call in one format; argmax means the same in both).
#include <stdexcept>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cuda_backend.h"
#include "kernels/cuda/pool_norm_kernels.h"

namespace amp {

using cudabk::floatCode;

namespace {

// Checked before outH()/outW() are formed (they divide by the stride): the CPU's checks, under
// which every window lies inside the padded input ((h - kernel) / stride truncates toward zero,
// so an input smaller than the window would still get one output, whose window reads past the
// plane: out of bounds on the device, where that loses the context).
bool validGeometry(const Pool2dGeometry& g) {
  return g.kernel > 0 && g.stride > 0 && g.padding >= 0 && 2 * g.padding <= g.kernel &&
         g.h + 2 * g.padding >= g.kernel && g.w + 2 * g.padding >= g.kernel && g.n >= 0 &&
         g.c >= 0;
}

cuda::PoolDims poolDims(const Pool2dGeometry& g, bool channelsLast) {
  cuda::PoolDims d;
  d.channels = g.c;
  d.channelsLast = channelsLast;
  d.planes = g.n * g.c;
  d.h = g.h;
  d.w = g.w;
  d.outH = g.outH();
  d.outW = g.outW();
  d.kernel = g.kernel;
  d.stride = g.stride;
  d.padding = g.padding;
  return d;
}

std::string geometryString(const Pool2dGeometry& g) {
  return "kernel " + std::to_string(g.kernel) + ", stride " + std::to_string(g.stride) +
         ", padding " + std::to_string(g.padding);
}

}  // namespace

void CudaBackend::maxPool2dForward(const Tensor& x, Tensor& y, Tensor& argmax,
                                   const Pool2dGeometry& g) {
  useDevice();
  // The CPU's check and message ("max_pool2d: invalid geometry (kernel 0, ...)"), so a layer is
  // refused with the same line on either backend; validGeometry adds only the plane counts.
  checks::poolGeometry(g.kernel, g.stride, g.padding, g.h, g.w);
  if (!validGeometry(g) || g.outH() <= 0 || g.outW() <= 0)
    throw std::invalid_argument("max_pool2d: invalid geometry (" + std::to_string(g.n) + " x " +
                                std::to_string(g.c) + " planes)");
  const bool nhwc =
      checks::sameFormat({&x, &y, &argmax}, "max_pool2d") == MemoryFormat::ChannelsLast;
  const cuda::PoolDims d = poolDims(g, nhwc);
  if (x.numel() != d.planes * g.h * g.w || y.numel() != d.planes * d.outH * d.outW ||
      argmax.numel() != y.numel() || argmax.dtype() != DType::I32)
    throw std::invalid_argument("max_pool2d: input " + shapeString(x.shape()) + ", output " +
                                shapeString(y.shape()) + ", argmax " + shapeString(argmax.shape()) +
                                " (int32) do not fit the geometry");
  const int xc = floatCode(x, "max_pool2d"), yc = floatCode(y, "max_pool2d");
  cuda::launchMaxPoolForward(d, xc, x.rawData(), yc, y.rawData(), argmax.data<std::int32_t>(),
                             stream());
  checkLaunch("max_pool2d", cudabk::shapes({&x, &y}) + ", " + geometryString(g));
}

void CudaBackend::maxPool2dBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx,
                                    const Pool2dGeometry& g) {
  useDevice();
  // The CPU scatters to wherever argmax points and needs only the sizes; the gather here walks
  // the windows, so it needs the geometry to be one a forward could have run with.
  if (!validGeometry(g)) throw std::invalid_argument("max_pool2d backward: invalid geometry");
  const bool nhwc = checks::sameFormat({&dy, &argmax, &dx}, "max_pool2d backward") ==
                    MemoryFormat::ChannelsLast;
  const cuda::PoolDims d = poolDims(g, nhwc);
  if (dy.numel() != d.planes * d.outH * d.outW || argmax.numel() != dy.numel() ||
      argmax.dtype() != DType::I32 || dx.numel() != d.planes * g.h * g.w)
    throw std::invalid_argument("max_pool2d backward: shapes do not fit the geometry");
  const int gc = floatCode(dy, "max_pool2d backward"), dc = floatCode(dx, "max_pool2d backward");
  cuda::launchMaxPoolBackward(d, gc, dy.rawData(), argmax.data<std::int32_t>(), dc, dx.rawData(),
                              stream());
  checkLaunch("max_pool2d backward", cudabk::shapes({&dy, &dx}) + ", " + geometryString(g));
}

}  // namespace amp
