// CPU backend: memory formats. convertFormatInto is the one transpose every format change goes
// through (kernels/cpu/image_transpose); NchwScratch lets each image op (convolution, pooling,
// batch norm, global average pooling) take channels-last operands by running its NCHW code on
// transposed copies. Transposes move bytes without arithmetic, so an op's results do not depend
// on its operands' formats, bit for bit: that is what makes the channels-last emulation
// (setChannelsLastEmulation) an exact stand-in for the CUDA backend's NHWC path in tests.
#include <stdexcept>
#include <string>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cpu_backend.h"
#include "kernels/cpu/image_transpose.h"

namespace amp {

void CpuBackend::convertFormatInto(const Tensor& src, Tensor& dst) {
  checks::convertFormatOperands(src, dst);
  if (src.format() == dst.format()) {
    copyInto(src, dst);
    return;
  }
  // One of the two is channels-last, so both are (N, C, H, W).
  cpu::transposeImage(dst.channelsLast(), dtypeSize(src.dtype()), src.rawData(), dst.rawData(),
                      src.dim(0), src.dim(1), src.dim(2) * src.dim(3));
}

namespace cpu {

const Tensor& NchwScratch::in(const Tensor& t) {
  if (!t.defined() || !t.channelsLast()) return t;
  m_held.push_back(m_be.empty(t.shape(), t.dtype(), MemCategory::Workspace));
  m_be.convertFormatInto(t, m_held.back());
  return m_held.back();
}

Tensor& NchwScratch::out(Tensor& t) {
  if (!t.defined() || !t.channelsLast()) return t;
  m_held.push_back(m_be.empty(t.shape(), t.dtype(), MemCategory::Workspace));
  m_pending.emplace_back(&m_held.back(), &t);
  return m_held.back();
}

void NchwScratch::finish() {
  for (auto& [scratch, destination] : m_pending) m_be.convertFormatInto(*scratch, *destination);
  m_pending.clear();
}

}  // namespace cpu

}  // namespace amp
