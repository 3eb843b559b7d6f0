// CUDA backend: optimizer steps as multi-tensor launches that read the step's gate on the
// device. The single-tensor sgdStep/adamStep run the same kernels on a one-entry table with a
// record of their own, and read their result at once.
#include <stdexcept>

#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_error.h"

namespace amp {

using cudabk::floatCode;

namespace {

void requireF32State(const Tensor* t, const Tensor& param, const char* what) {
  if (t && (t->dtype() != DType::F32 || t->numel() != param.numel()))
    throw std::invalid_argument(std::string(what) + " must be fp32 and match the parameter");
}

cuda::MultiTensorEntry paramEntry(Tensor& param, const Tensor& grad, Tensor* a, Tensor* b,
                                  const char* op, int roundCode = 0) {
  cudabk::requireSameSize(param, grad, op);
  requireF32State(a, param, "optimizer state");
  requireF32State(b, param, "optimizer state");
  cuda::MultiTensorEntry e;
  e.param = param.rawData();
  e.grad = grad.rawData();
  e.stateA = a ? a->data<float>() : nullptr;
  e.stateB = b ? b->data<float>() : nullptr;
  e.n = param.numel();
  e.paramCode = floatCode(param, op);
  e.gradCode = floatCode(grad, op);
  e.roundCode = roundCode;
  return e;
}

// A weight copy the step writes beside the master (lowCopies): 16 bits, the master's size.
void attachWeightCopy(cuda::MultiTensorEntry& e, std::span<Tensor* const> lowCopies,
                      std::size_t i, const Tensor& param, const char* op) {
  if (lowCopies.empty() || !lowCopies[i]) return;
  const Tensor& c = *lowCopies[i];
  if (param.dtype() != DType::F32 || !isLowPrecision(c.dtype()) || c.numel() != param.numel())
    throw std::invalid_argument(std::string(op) +
                                ": a weight copy is a 16-bit tensor of an fp32 master's size");
  e.lowCopy = c.rawData();
  e.lowCode = floatCode(c, op);
}

cuda::SgdScalars sgdScalars(const SgdParams& p) {
  cuda::SgdScalars s;
  s.lr = p.lr;
  s.weightDecay = p.weightDecay;
  s.momentum = p.momentum;
  s.keep = 1.f - p.dampening;
  s.nesterov = p.nesterov;
  s.firstStep = p.firstStep;
  return s;
}

AdamScalars adamScalars(const AdamParams& p) {
  if (p.step < 1) throw std::invalid_argument("adam: step count starts at 1");
  return makeAdamScalars(p.lr, p.beta1, p.beta2, p.eps, p.weightDecay, p.decoupled, p.step);
}

}  // namespace

void CudaBackend::foreachSgdStep(std::span<Tensor* const> params, std::span<Tensor* const> grads,
                                 std::span<Tensor* const> momentum, const SgdParams& p,
                                 std::span<const DType> roundFirst,
                                 std::span<Tensor* const> lowCopies) {
  if (!replaying()) useDevice();
  if (params.size() != grads.size() || params.size() != momentum.size() ||
      (!roundFirst.empty() && roundFirst.size() != params.size()) ||
      (!lowCopies.empty() && lowCopies.size() != params.size()))
    throw std::invalid_argument("foreach sgd: tensor lists differ in length");
  std::vector<cuda::MultiTensorEntry> entries;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (p.momentum != 0.f && !momentum[i])
      throw std::invalid_argument("foreach sgd: momentum needs a buffer per parameter");
    entries.push_back(paramEntry(*params[i], *grads[i], momentum[i], nullptr, "sgd",
                                 cudabk::roundCode(roundFirst, i, *grads[i], "foreach sgd")));
    attachWeightCopy(entries.back(), lowCopies, i, *params[i], "foreach sgd");
  }
  const cuda::SgdScalars scalars = sgdScalars(p);
  if (stepGraphPending()) stepCheck("sgd step", cudabk::tableKey(entries));
  const auto* onDevice = static_cast<const cuda::SgdScalars*>(
      stepScalar(cudabk::SlotKind::Scalar, "sgd step", &scalars, sizeof scalars));
  if (replaying()) return;
  std::int64_t maxN = 0;
  const auto* table = uploadTable(entries, maxN);
  cuda::launchSgdStep(table, static_cast<int>(entries.size()), maxN, scalars, m_stepRecord,
                      m_stream, onDevice);
  checkLaunch("sgd step", std::to_string(entries.size()) + " parameters");
}

void CudaBackend::foreachAdamStep(std::span<Tensor* const> params, std::span<Tensor* const> grads,
                                  std::span<Tensor* const> expAvg,
                                  std::span<Tensor* const> expAvgSq, const AdamParams& p,
                                  std::span<const DType> roundFirst,
                                  std::span<Tensor* const> lowCopies) {
  if (!replaying()) useDevice();
  if (params.size() != grads.size() || params.size() != expAvg.size() ||
      params.size() != expAvgSq.size() || (!roundFirst.empty() && roundFirst.size() != params.size()) ||
      (!lowCopies.empty() && lowCopies.size() != params.size()))
    throw std::invalid_argument("foreach adam: tensor lists differ in length");
  std::vector<cuda::MultiTensorEntry> entries;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!expAvg[i] || !expAvgSq[i]) throw std::invalid_argument("foreach adam: missing moments");
    entries.push_back(paramEntry(*params[i], *grads[i], expAvg[i], expAvgSq[i], "adam",
                                 cudabk::roundCode(roundFirst, i, *grads[i], "foreach adam")));
    attachWeightCopy(entries.back(), lowCopies, i, *params[i], "foreach adam");
  }
  const AdamScalars scalars = adamScalars(p);
  if (stepGraphPending()) stepCheck("adam step", cudabk::tableKey(entries));
  const auto* onDevice = static_cast<const AdamScalars*>(
      stepScalar(cudabk::SlotKind::Scalar, "adam step", &scalars, sizeof scalars));
  if (replaying()) return;
  std::int64_t maxN = 0;
  const auto* table = uploadTable(entries, maxN);
  cuda::launchAdamStep(table, static_cast<int>(entries.size()), maxN, scalars, m_stepRecord,
                       m_stream, onDevice);
  checkLaunch("adam step", std::to_string(entries.size()) + " parameters");
}

UpdateResult CudaBackend::sgdStep(Tensor& param, const Tensor& grad, Tensor* momentumBuf,
                                  const SgdParams& p) {
  useDevice();
  if (p.momentum != 0.f && !momentumBuf)
    throw std::invalid_argument("sgd: momentum needs a buffer");
  const std::vector<cuda::MultiTensorEntry> entries{
      paramEntry(param, grad, momentumBuf, nullptr, "sgd")};
  cuda::launchBeginStep(m_opRecord, m_stream);
  cuda::launchGateStep(false, false, m_opRecord, m_stream);
  std::int64_t maxN = 0;
  const auto* table = uploadTable(entries, maxN);
  cuda::launchSgdStep(table, 1, maxN, sgdScalars(p), m_opRecord, m_stream);
  checkLaunch("sgd step", cudabk::shapes({&param, &grad}));
  cuda::DeviceStepStats d;
  download(&d, m_opRecord, sizeof d, "sgd step");
  return {static_cast<std::int64_t>(d.lost), d.stepGradSumOfSquares};
}

UpdateResult CudaBackend::adamStep(Tensor& param, const Tensor& grad, Tensor& expAvg,
                                   Tensor& expAvgSq, const AdamParams& p) {
  useDevice();
  const AdamScalars s = adamScalars(p);
  const std::vector<cuda::MultiTensorEntry> entries{
      paramEntry(param, grad, &expAvg, &expAvgSq, "adam")};
  cuda::launchBeginStep(m_opRecord, m_stream);
  cuda::launchGateStep(false, false, m_opRecord, m_stream);
  std::int64_t maxN = 0;
  const auto* table = uploadTable(entries, maxN);
  cuda::launchAdamStep(table, 1, maxN, s, m_opRecord, m_stream);
  checkLaunch("adam step", cudabk::shapes({&param, &grad}));
  cuda::DeviceStepStats d;
  download(&d, m_opRecord, sizeof d, "adam step");
  return {static_cast<std::int64_t>(d.lost), d.stepGradSumOfSquares};
}

}  // namespace amp
