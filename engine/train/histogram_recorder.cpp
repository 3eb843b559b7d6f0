#include "engine/train/histogram_recorder.h"

namespace amp {

std::string_view histogramKindName(HistogramKind k) {
  switch (k) {
    case HistogramKind::WeightGrad: return "weight_grad";
    case HistogramKind::ActivationGrad: return "activation_grad";
    case HistogramKind::Activation: return "activation";
  }
  return "?";
}

HistogramRecord& HistogramRecorder::slot(const std::string& tensor, HistogramKind kind, DType dtype) {
  for (auto& r : m_records)
    if (r.tensor == tensor && r.kind == kind) return r;
  m_records.push_back({tensor, kind, dtype, {}, {}});
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
}

void HistogramRecorder::weightGrad(const std::string& name, const Tensor& g) {
  auto& r = slot(name, HistogramKind::WeightGrad, g.dtype());
  r.scaled = m_be.histogram(g, 1.0);
  r.unscaled = m_be.histogram(g, m_invScale);
}

}  // namespace amp
