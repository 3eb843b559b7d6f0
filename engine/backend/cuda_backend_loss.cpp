// CUDA backend: losses and accuracy. The forms that return a host number read one small result
// back (evaluation, tests); training uses the *IntoStep forms, which leave the loss in the step's
// device record for the step's one read.
#include <stdexcept>
#include <vector>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_fast_paths.h"
#include "engine/backend/cuda_error.h"

namespace amp {

using cudabk::floatCode;

using checks::requireF32;

Tensor CudaBackend::launchCrossEntropyRows(const Tensor& logits, const Tensor& labels,
                                           Tensor& probs, int* badLabel) {
  useDevice();
  checks::labelsMatch(logits, labels);
  requireF32(probs, "cross-entropy probabilities");
  const std::int64_t m = logits.dim(0), c = logits.dim(1);
  // m doubles in 2m fp32 slots; freed when the caller lets go, reused only by work queued later.
  Tensor rows = empty({2 * m}, DType::F32, MemCategory::Workspace);
  cuda::launchCrossEntropyForward(floatCode(logits, "cross-entropy"), logits.rawData(),
                                  labels.data<std::int32_t>(), m, c, probs.data<float>(),
                                  static_cast<double*>(rows.rawData()), badLabel, m_stream,
                                  cudabk::fastPathEnabled("warp-losses"));
  checkLaunch("cross-entropy forward", cudabk::shapes({&logits, &labels}));
  return rows;
}

double CudaBackend::crossEntropyForward(const Tensor& logits, const Tensor& labels,
                                        Tensor& probs) {
  useDevice();
  // Per-row losses in double, summed on the host in row order.
  auto* bad = static_cast<int*>(scratch(sizeof(int)));
  const Tensor rows = launchCrossEntropyRows(logits, labels, probs, bad);
  const std::int64_t m = logits.dim(0), c = logits.dim(1);
  std::vector<double> host(static_cast<std::size_t>(m));
  int badRow = 0;
  checkCuda(cudaMemcpyAsync(host.data(), rows.rawData(), host.size() * 8, cudaMemcpyDeviceToHost,
                            m_stream),
            "cross-entropy forward");
  download(&badRow, bad, sizeof badRow, "cross-entropy forward");
  if (badRow) {
    const std::vector<std::int32_t> y = toHostInt(labels);
    throw std::invalid_argument("cross-entropy: label " + std::to_string(y[badRow - 1]) +
                                " out of range [0, " + std::to_string(c) + ")");
  }
  double total = 0;
  for (double v : host) total += v;  // in row order, as the CPU
  return total / double(m);
}

void CudaBackend::crossEntropyForwardIntoStep(const Tensor& logits, const Tensor& labels,
                                              Tensor& probs) {
  const Tensor rows = launchCrossEntropyRows(logits, labels, probs, &m_stepRecord->badLabel);
  cuda::launchAddRowLossesToStep(static_cast<const double*>(rows.rawData()), logits.dim(0),
                                 m_stepRecord, m_stream, cudabk::fastPathEnabled("warp-losses"));
  checkLaunch("cross-entropy loss", cudabk::shapes({&logits}));
}

void CudaBackend::mseForwardIntoStep(const Tensor& pred, const Tensor& target) {
  useDevice();
  requireF32(target, "mse target");
  cudabk::requireSameSize(pred, target, "mse");
  cuda::launchMseForward(floatCode(pred, "mse"), pred.rawData(), target.data<float>(),
                         pred.numel(), &m_stepRecord->mseSum, m_stream);
  checkLaunch("mse forward", cudabk::shapes({&pred, &target}));
  cuda::launchAddMseToStep(pred.numel(), m_stepRecord, m_stream);
  checkLaunch("mse loss", cudabk::shapes({&pred}));
}

void CudaBackend::crossEntropyBackward(const Tensor& probs, const Tensor& labels, float gradScale,
                                       Tensor& dlogits) {
  useDevice();
  requireF32(probs, "cross-entropy probabilities");
  const std::int64_t m = probs.dim(0), c = probs.dim(1);
  const float k = gradScale / float(m);
  // In a step graph, k carries the loss scale: a slot that each replay refills (LossFactor).
  const auto* kOnDevice = static_cast<const float*>(
      stepScalar(cudabk::SlotKind::LossFactor, "cross-entropy backward", &k, sizeof k, 1.f, float(m)));
  cuda::launchCrossEntropyBackward(probs.data<float>(), labels.data<std::int32_t>(), m, c, k,
                                   floatCode(dlogits, "cross-entropy"), dlogits.rawData(), m_stream,
                                   kOnDevice);
  checkLaunch("cross-entropy backward", cudabk::shapes({&probs, &dlogits}));
}

double CudaBackend::mseForward(const Tensor& pred, const Tensor& target) {
  useDevice();
  requireF32(target, "mse target");
  cudabk::requireSameSize(pred, target, "mse");
  auto* sum = static_cast<double*>(scratch(sizeof(double)));
  cuda::launchMseForward(floatCode(pred, "mse"), pred.rawData(), target.data<float>(),
                         pred.numel(), sum, m_stream);
  checkLaunch("mse forward", cudabk::shapes({&pred, &target}));
  double host = 0;
  download(&host, sum, sizeof host, "mse forward");
  return host / double(pred.numel());
}

void CudaBackend::mseBackward(const Tensor& pred, const Tensor& target, float gradScale,
                              Tensor& dpred) {
  useDevice();
  const float k = 2.f * gradScale / float(pred.numel());
  const auto* kOnDevice = static_cast<const float*>(stepScalar(
      cudabk::SlotKind::LossFactor, "mse backward", &k, sizeof k, 2.f, float(pred.numel())));
  cuda::launchMseBackward(floatCode(pred, "mse"), pred.rawData(), target.data<float>(),
                          pred.numel(), k, floatCode(dpred, "mse"), dpred.rawData(), m_stream,
                          kOnDevice);
  checkLaunch("mse backward", cudabk::shapes({&pred, &dpred}));
}

std::int64_t CudaBackend::countCorrect(const Tensor& logits, const Tensor& labels) {
  useDevice();
  checks::labelsMatch(logits, labels);
  auto* count = static_cast<unsigned long long*>(scratch(sizeof(unsigned long long)));
  cuda::launchCountCorrect(floatCode(logits, "count correct"), logits.rawData(),
                           labels.data<std::int32_t>(), logits.dim(0), logits.dim(1), count,
                           m_stream);
  checkLaunch("count correct", cudabk::shapes({&logits}));
  unsigned long long host = 0;
  download(&host, count, sizeof host, "count correct");
  return static_cast<std::int64_t>(host);
}

}  // namespace amp
