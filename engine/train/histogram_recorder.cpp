#include "engine/train/histogram_recorder.h"

#include <algorithm>

namespace amp {

namespace {
// Adds counts into a record; -1 (not measured) becomes the first measurement.
void addRounding(HistogramRecord& r, const RoundingCounts& c) {
  r.flushedToZero = std::max<std::int64_t>(r.flushedToZero, 0) + c.flushedToZero;
  r.roundedToInf = std::max<std::int64_t>(r.roundedToInf, 0) + c.roundedToInf;
}
}  // namespace

std::string_view histogramKindName(HistogramKind k) {
  switch (k) {
    case HistogramKind::WeightGrad: return "weight_grad";
    case HistogramKind::ActivationGrad: return "activation_grad";
    case HistogramKind::Activation: return "activation";
    case HistogramKind::Weight: return "weight";
  }
  return "?";
}

HistogramRecord& HistogramRecorder::slot(const std::string& tensor, HistogramKind kind, DType dtype) {
  for (auto& r : m_records)
    if (r.tensor == tensor && r.kind == kind) return r;
  m_records.push_back({tensor, kind, dtype, {}, {}, -1, -1});
  return m_records.back();
}

void HistogramRecorder::activation(const std::string& layer, const Tensor& y) {
  auto h = m_be.histogram(y, 1.0);
  auto& r = slot(layer, HistogramKind::Activation, y.dtype());
  r.scaled.merge(h);
  r.unscaled.merge(h);  // activations are not scaled
}

void HistogramRecorder::activationGrad(const std::string& layer, const Tensor& dy) {
  auto& r = slot(layer, HistogramKind::ActivationGrad, dy.dtype());
  r.scaled.merge(m_be.histogram(dy, 1.0));
  r.unscaled.merge(m_be.histogram(dy, m_invScale));
  if (m_pendingInputRounding) addRounding(r, *m_pendingInputRounding);
  m_pendingInputRounding.reset();
}

void HistogramRecorder::weightGradRounding(const std::string& param, const RoundingCounts& c) {
  // One count per gradient element: with gradient accumulation each micro-batch's product is
  // rounded on its own, and summing them would count each element once per micro-batch (a
  // "300%" flushed); the histogram's gradient is the accumulated one, so the last product stands.
  m_weightRounding[param] = c;
}

void HistogramRecorder::inputGradRounding(const RoundingCounts& c) {
  m_pendingInputRounding = c;
}

void HistogramRecorder::weightGrad(const std::string& name, const Tensor& g) {
  auto& r = slot(name, HistogramKind::WeightGrad, g.dtype());
  r.scaled = m_be.histogram(g, 1.0);
  r.unscaled = m_be.histogram(g, m_invScale);
  if (const auto it = m_weightRounding.find(name); it != m_weightRounding.end()) {
    r.flushedToZero = it->second.flushedToZero;
    r.roundedToInf = it->second.roundedToInf;
  }
}

}  // namespace amp
