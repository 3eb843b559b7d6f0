// CUDA backend: memory formats. Image activations are channels-last (NHWC) unless switched off
// (AMP_CUDA_DISABLE=channels-last, setChannelsLast): cuDNN's tensor-core kernels work in NHWC and
// transposed NCHW operands around every convolution (22% of a ResNet-20 step's GPU time on an
// H200). Format changes, where a layer needs one (the model's input, Flatten), are our transpose
// kernel (kernels/cuda/image_transpose.cu): bytes moved, never converted, so exact.
#include <stdexcept>
#include <string>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_fast_paths.h"
#include "kernels/cuda/image_kernels.h"

namespace amp {

MemoryFormat CudaBackend::preferredImageFormat() const {
  return m_channelsLast && cudabk::fastPathEnabled("channels-last") ? MemoryFormat::ChannelsLast
                                                                    : MemoryFormat::Contiguous;
}

void CudaBackend::convertFormatInto(const Tensor& src, Tensor& dst) {
  useDevice();
  checks::convertFormatOperands(src, dst);
  if (src.format() == dst.format()) {
    copyInto(src, dst);
    return;
  }
  // One of the two is channels-last, so both are (N, C, H, W).
  cuda::launchTransposeImage(dst.channelsLast(), dtypeSize(src.dtype()), src.rawData(),
                             dst.rawData(), src.dim(0), src.dim(1), src.dim(2) * src.dim(3),
                             stream());
  checkLaunch("convert format", cudabk::shapes({&src}) + " to " + memoryFormatName(dst.format()));
}

}  // namespace amp
