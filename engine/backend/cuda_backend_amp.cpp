// CUDA backend: the AMP passes. The multi-tensor step ops keep found_inf, the skip decision, the
// clip coefficient and the new scale in one device record; readStepStats copies it back once per
// step. The single-tensor forms (unscaleAndCheck, countNonFinite, ...) read their result at once.
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_error.h"
#include "engine/backend/cuda_fast_paths.h"

namespace amp {

using cudabk::floatCode;

namespace {
std::vector<cuda::MultiTensorEntry> gradEntries(std::span<Tensor* const> grads, const char* op,
                                                std::span<const DType> roundFirst = {}) {
  std::vector<cuda::MultiTensorEntry> entries;
  entries.reserve(grads.size());
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Tensor* g = grads[i];
    cuda::MultiTensorEntry e;
    e.grad = g->rawData();
    e.n = g->numel();
    e.gradCode = floatCode(*g, op);
    e.roundCode = cudabk::roundCode(roundFirst, i, *g, op);
    entries.push_back(e);
  }
  return entries;
}

}  // namespace

namespace cudabk {
std::vector<std::int64_t> tableKey(const std::vector<cuda::MultiTensorEntry>& entries) {
  std::vector<std::int64_t> key;
  key.reserve(entries.size() * 10);
  auto address = [](const void* p) { return static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(p)); };
  for (const auto& e : entries) {
    for (const void* p : {static_cast<const void*>(e.param), static_cast<const void*>(e.grad),
                          static_cast<const void*>(e.stateA), static_cast<const void*>(e.stateB),
                          static_cast<const void*>(e.lowCopy)})
      key.push_back(address(p));
    for (std::int64_t v : {e.n, std::int64_t(e.paramCode), std::int64_t(e.gradCode),
                           std::int64_t(e.roundCode), std::int64_t(e.lowCode)})
      key.push_back(v);
  }
  return key;
}
}  // namespace cudabk

namespace {
StepStats hostStats(const cuda::DeviceStepStats& d) {
  StepStats s;
  s.lossSum = d.lossSum;
  s.unscaled = d.unscaled != 0;
  s.foundInf = d.foundInf != 0;
  s.firstNonFinite = d.firstNonFinite == cuda::kNoNonFinite ? -1 : d.firstNonFinite;
  s.unscaledSumOfSquares = d.unscaledSumOfSquares;
  s.normTaken = d.normTaken != 0;
  s.normSumOfSquares = d.normSumOfSquares;
  s.clipped = d.clipped != 0;
  s.stepped = d.stepped != 0;
  s.lost = static_cast<std::int64_t>(d.lost);
  s.stepGradSumOfSquares = d.stepGradSumOfSquares;
  s.scaleUpdated = d.scaleUpdated != 0;
  s.scale = d.scale;
  s.scaleEvent = d.scaleEvent;
  return s;
}
}  // namespace

const cuda::MultiTensorEntry* CudaBackend::uploadTable(
    const std::vector<cuda::MultiTensorEntry>& entries, std::int64_t& maxN) {
  maxN = 0;
  for (const auto& e : entries) maxN = std::max(maxN, e.n);
  const std::size_t bytes = entries.size() * sizeof(cuda::MultiTensorEntry);
  if (capturing()) {
    // A table of the graph's own, written now from a side stream (the capturing stream runs
    // nothing): the shared buffer below is rewritten by later launches, and a graph cannot copy
    // from pageable memory at replay time. Its own cudaMalloc, not a block of the graph's pool:
    // a pool block may be a temporary of an earlier node, which every replay would write over
    // the table before the launch that reads it.
    if (!bytes) return nullptr;
    void* table = nullptr;
    checkCuda(cudaMalloc(&table, bytes), "allocate multi-tensor table");
    m_graph->tables.emplace_back(table, bytes);
    checkCuda(cudaMemcpyAsync(table, entries.data(), bytes, cudaMemcpyHostToDevice, m_sideStream),
              "upload multi-tensor table");
    checkCuda(cudaStreamSynchronize(m_sideStream), "upload multi-tensor table");
    return static_cast<const cuda::MultiTensorEntry*>(table);
  }
  if (bytes > m_tableBytes) {
    synchronize("multi-tensor table");
    void* old = m_table;
    m_table = nullptr;
    m_tableBytes = 0;
    checkCuda(cudaFree(old), "free multi-tensor table");
    checkCuda(cudaMalloc(&m_table, bytes * 2), "allocate multi-tensor table");
    m_tableBytes = bytes * 2;
  }
  // Stream-ordered after the previous launch that read the table, so one buffer serves all.
  if (bytes)
    checkCuda(cudaMemcpyAsync(m_table, entries.data(), bytes, cudaMemcpyHostToDevice, m_stream),
              "upload multi-tensor table");
  return static_cast<const cuda::MultiTensorEntry*>(m_table);
}

void CudaBackend::beginStepTiming() {
  if (capturing() || replaying()) return;  // the mark comes before either begins
  useDevice();
  // Before the batch's upload: eager, captured and replayed steps all time it (the copy is on
  // this stream, after the event).
  recordEvent(m_stepEvents.start, "step timing");
  m_stepTimingMarked = true;
}

void CudaBackend::beginStep() {
  m_unscaledThisStep = false;
  m_stepSeconds.reset();
  if (replaying()) return;  // the graph begins with the captured launch below
  useDevice();
  // A graph's step is timed around its launch (launchStepGraph) unless beginStepTiming began it.
  if (!capturing() && !m_stepTimingMarked) recordEvent(m_stepEvents.start, "step timing");
  cuda::launchBeginStep(m_stepRecord, m_stream);
  checkLaunch("begin step", "");
}

namespace cudabk {
int roundCode(std::span<const DType> roundFirst, std::size_t i, const Tensor& grad, const char* op) {
  if (roundFirst.empty()) return 0;
  if (i >= roundFirst.size())
    throw std::invalid_argument(std::string(op) + ": the deferred-rounding list is shorter than the gradients");
  const DType d = roundFirst[i];
  if (d == DType::F32) return 0;
  if (grad.dtype() != DType::F32 || (d != DType::F16 && d != DType::BF16))
    throw std::invalid_argument(std::string(op) + ": a deferred rounding through " +
                                std::string(dtypeName(d)) + " of a " + std::string(dtypeName(grad.dtype())) +
                                " gradient (only fp32 gradients round through fp16/bf16)");
  return d == DType::F16 ? 1 : 2;
}
}  // namespace cudabk

bool CudaBackend::defersGradRounding() const {
  return cudabk::fastPathEnabled("deferred-grad-rounding");
}

bool CudaBackend::keepsWeightCopies() const {
  return cudabk::fastPathEnabled("optimizer-weight-copies");
}

void CudaBackend::foreachUnscaleAndCheck(std::span<Tensor* const> grads, float invScale,
                                         std::span<const DType> roundFirst) {
  if (!replaying()) useDevice();
  if (!roundFirst.empty() && roundFirst.size() != grads.size())
    throw std::invalid_argument("foreach unscale: tensor lists differ in length");
  const auto entries = gradEntries(grads, "unscale", roundFirst);
  if (stepGraphPending()) stepCheck("unscale", cudabk::tableKey(entries));
  const auto* invOnDevice = static_cast<const float*>(
      stepScalar(cudabk::SlotKind::Scalar, "unscale", &invScale, sizeof invScale));
  m_unscaledThisStep = true;
  if (replaying()) return;
  std::int64_t maxN = 0;
  const auto* table = uploadTable(entries, maxN);
  cuda::launchUnscaleAndCheck(table, static_cast<int>(grads.size()), maxN, invScale,
                              m_stepRecord, m_stream, invOnDevice);
  checkLaunch("unscale and check", std::to_string(grads.size()) + " gradients");
}

void CudaBackend::foreachClipGradNorm(std::span<Tensor* const> grads, double maxNorm) {
  if (!replaying()) useDevice();
  const auto entries = gradEntries(grads, "clip");
  if (stepGraphPending()) {
    std::vector<std::int64_t> key = cudabk::tableKey(entries);
    std::int64_t bits = 0;
    std::memcpy(&bits, &maxNorm, sizeof bits);
    key.push_back(bits);
    key.push_back(m_unscaledThisStep);
    stepCheck("clip", std::move(key));
    if (replaying()) return;
  }
  std::int64_t maxN = 0;
  const auto* table = uploadTable(entries, maxN);
  cuda::launchClipGradNorm(table, static_cast<int>(grads.size()), maxN, maxNorm,
                           m_unscaledThisStep, m_stepRecord, m_stream);
  checkLaunch("clip grad norm", std::to_string(grads.size()) + " gradients");
}

void CudaBackend::gateStep(const StepGate& gate) {
  if (stepGraphPending()) {
    stepCheck("gate", {gate.skipIfFoundInf, gate.skipIfNonFiniteAfterUnscale});
    if (replaying()) return;
  }
  useDevice();
  cuda::launchGateStep(gate.skipIfFoundInf, gate.skipIfNonFiniteAfterUnscale, m_stepRecord,
                       m_stream);
  checkLaunch("gate step", "");
}

void CudaBackend::updateScale(const ScaleRule& rule, const ScaleCounters& current) {
  if (stepGraphPending()) {
    std::int64_t g = 0, b = 0;
    std::memcpy(&g, &rule.growthFactor, sizeof g);
    std::memcpy(&b, &rule.backoffFactor, sizeof b);
    std::int32_t lo = 0, hi = 0;
    std::memcpy(&lo, &rule.minScale, sizeof lo);
    std::memcpy(&hi, &rule.maxScale, sizeof hi);
    stepCheck("update scale", {std::int64_t(rule.kind), g, b, rule.growthInterval, lo, hi,
                               rule.hysteresis, rule.consecutiveHysteresis});
  }
  const auto* currentOnDevice = static_cast<const ScaleCounters*>(
      stepScalar(cudabk::SlotKind::Scalar, "update scale", &current, sizeof current));
  if (replaying()) return;
  useDevice();
  cuda::launchUpdateScale(rule, current, m_stepRecord, m_stream, currentOnDevice);
  checkLaunch("update scale", "");
}

StepStats CudaBackend::readStepStats() {
  if (stepGraphPending()) {
    launchStepGraph();  // ends a capture first; times the launch with the step's events
  } else {
    useDevice();
    recordEvent(m_stepEvents.stop, "step timing");
  }
  cuda::DeviceStepStats d;
  download(&d, m_stepRecord, sizeof d, "read step stats");
  m_stepTimingMarked = false;  // the next step marks its own start
  float ms = 0;
  if (cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(m_stepEvents.start),
                           static_cast<cudaEvent_t>(m_stepEvents.stop)) == cudaSuccess)
    m_stepSeconds = ms * 1e-3;
  else
    cudaGetLastError();  // no beginStep since construction: no device time for this read
  if (d.badLabel)
    throw std::invalid_argument("cross-entropy: the label in row " + std::to_string(d.badLabel - 1) +
                                " of a training batch is out of range");
  return hostStats(d);
}

UnscaleResult CudaBackend::unscaleAndCheck(std::span<Tensor* const> grads, float invScale) {
  useDevice();
  cuda::launchBeginStep(m_opRecord, m_stream);
  std::int64_t maxN = 0;
  const auto* table = uploadTable(gradEntries(grads, "unscale"), maxN);
  cuda::launchUnscaleAndCheck(table, static_cast<int>(grads.size()), maxN, invScale, m_opRecord,
                              m_stream);
  checkLaunch("unscale and check", std::to_string(grads.size()) + " gradients");
  cuda::DeviceStepStats d;
  download(&d, m_opRecord, sizeof d, "unscale and check");
  const StepStats s = hostStats(d);
  return {s.foundInf, s.firstNonFinite, s.unscaledSumOfSquares};
}

std::int64_t CudaBackend::countNonFinite(const Tensor& t) {
  useDevice();
  auto* count = static_cast<unsigned long long*>(scratch(sizeof(unsigned long long)));
  cuda::launchCountNonFinite(floatCode(t, "countNonFinite"), t.rawData(), t.numel(), count,
                             m_stream);
  checkLaunch("count non-finite", cudabk::shapes({&t}));
  unsigned long long host = 0;
  download(&host, count, sizeof host, "count non-finite");
  return static_cast<std::int64_t>(host);
}

double CudaBackend::sumOfSquares(const Tensor& t) {
  useDevice();
  auto* sum = static_cast<double*>(scratch(sizeof(double)));
  cuda::launchSumOfSquares(floatCode(t, "sumOfSquares"), t.rawData(), t.numel(), sum, m_stream);
  checkLaunch("sum of squares", cudabk::shapes({&t}));
  double host = 0;
  download(&host, sum, sizeof host, "sum of squares");
  return host;
}

ExponentHistogram CudaBackend::histogram(const Tensor& t, double multiplier) {
  useDevice();
  int e2 = 0;
  const bool powerOfTwo = multiplier > 0 && std::frexp(multiplier, &e2) == 0.5;
  auto* counts = static_cast<unsigned long long*>(
      scratch(cuda::kHistogramSlots * sizeof(unsigned long long)));
  cuda::launchHistogram(floatCode(t, "histogram"), t.rawData(), t.numel(), multiplier, powerOfTwo,
                        e2 - 1, counts, m_stream);
  checkLaunch("histogram", cudabk::shapes({&t}));
  unsigned long long host[cuda::kHistogramSlots];
  download(host, counts, sizeof host, "histogram");
  ExponentHistogram h;
  for (int i = 0; i < kHistBins; ++i) h.counts[i] = static_cast<std::int64_t>(host[i]);
  h.total = t.numel();
  h.underflow = static_cast<std::int64_t>(host[kHistBins + 0]);
  h.subnormal = static_cast<std::int64_t>(host[kHistBins + 1]);
  h.overflow = static_cast<std::int64_t>(host[kHistBins + 2]);
  h.nonFinite = static_cast<std::int64_t>(host[kHistBins + 3]);
  return h;
}

}  // namespace amp
