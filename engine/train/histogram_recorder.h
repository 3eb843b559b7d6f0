// Collects exponent histograms of activations and activation gradients as they flow through
// the model (a TensorObserver), and of weight gradients before unscaling.
#pragma once

#include <vector>

#include "engine/nn/layer.h"
#include "engine/train/step_metrics.h"

namespace amp {

class HistogramRecorder final : public TensorObserver {
 public:
  HistogramRecorder(Backend& be, float scale) : m_be(be), m_invScale(1.0 / double(scale)) {}
  void activation(const std::string& layer, const Tensor& y) override;
  void activationGrad(const std::string& layer, const Tensor& dy) override;
  void weightGrad(const std::string& name, const Tensor& g);
  std::vector<HistogramRecord> take() { return std::move(m_records); }

 private:
  // Micro-batches of one step add into the same record.
  HistogramRecord& slot(const std::string& tensor, HistogramKind kind, DType dtype);
  Backend& m_be;
  double m_invScale;
  std::vector<HistogramRecord> m_records;
};

}  // namespace amp
