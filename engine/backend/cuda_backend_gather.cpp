// CUDA backend: a batch gathered from a training set kept on the device (the trainer's device
// cache). Rows in order (the unshuffled recipe) are one device-to-device copy; shuffled rows go
// through a small index upload and one gather kernel. Either way the batch never crosses PCIe.
#include <cuda_runtime.h>

#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_error.h"

namespace amp {

void CudaBackend::gatherRows(const Tensor& src, std::span<const std::int64_t> rows, Tensor& dst) {
  useDevice();
  refuseWhileCapturing("a gather of rows the host picks every step");
  const std::size_t rowBytes = checks::gatherRows(src, rows, dst);
  if (rows.empty() || rowBytes == 0) return;
  const auto* in = static_cast<const std::uint8_t*>(src.rawData());
  bool contiguous = true;
  for (std::size_t i = 1; i < rows.size() && contiguous; ++i) contiguous = rows[i] == rows[0] + std::int64_t(i);
  if (contiguous) {
    checkCuda(cudaMemcpyAsync(dst.rawData(), in + static_cast<std::size_t>(rows[0]) * rowBytes,
                              rows.size() * rowBytes, cudaMemcpyDeviceToDevice, m_stream),
              "gather rows", cudabk::shapes({&src, &dst}));
    return;
  }
  if (src.dim(0) > std::numeric_limits<std::int32_t>::max())
    throw std::invalid_argument("gatherRows: more than 2^31 rows in " + shapeString(src.shape()));
  std::vector<std::int32_t> idx(rows.begin(), rows.end());
  // The indices' buffer is stream-ordered like every temporary here: freed to the cache when
  // this returns, reused only by work queued after the gather.
  Tensor onDevice = fromHostInt(idx, {static_cast<std::int64_t>(idx.size())}, MemCategory::Workspace);
  cuda::launchGatherRows(src.rawData(), onDevice.data<std::int32_t>(), static_cast<std::int64_t>(rows.size()),
                         static_cast<std::int64_t>(rowBytes), dst.rawData(), m_stream);
  checkLaunch("gather rows", cudabk::shapes({&src, &dst}));
}

}  // namespace amp
