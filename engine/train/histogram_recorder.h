// Collects exponent histograms of activations and activation gradients as they flow through
// the model (a TensorObserver), and of weight gradients before unscaling; with them, what
// rounding to 16 bits did to the gradients the layers computed (flushed to zero, made inf).
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "engine/nn/layer.h"
#include "engine/train/step_metrics.h"

namespace amp {

class HistogramRecorder final : public TensorObserver {
 public:
  // measureRounding: ask the layers for their rounding counts (off when the trainer's fp32
  // replay supplies end-to-end ones instead).
  HistogramRecorder(Backend& be, float scale, bool measureRounding = true)
      : m_be(be), m_invScale(1.0 / double(scale)), m_measureRounding(measureRounding) {}
  bool wantsRoundingCounts() const override { return m_measureRounding; }
  void activation(const std::string& layer, const Tensor& y) override;
  void activationGrad(const std::string& layer, const Tensor& dy) override;
  void weightGradRounding(const std::string& param, const RoundingCounts& c) override;
  void inputGradRounding(const RoundingCounts& c) override;
  void discardInputGradRounding() override { m_pendingInputRounding.reset(); }
  void weightGrad(const std::string& name, const Tensor& g);
  std::vector<HistogramRecord> take() { return std::move(m_records); }

 private:
  // Micro-batches of one step add into the same record.
  HistogramRecord& slot(const std::string& tensor, HistogramKind kind, DType dtype);
  Backend& m_be;
  double m_invScale;
  bool m_measureRounding;
  std::vector<HistogramRecord> m_records;
  // Weight-gradient counts arrive during backward, before weightGrad() records the gradient
  // (summed over micro-batches); an input gradient's counts wait for the activationGrad call
  // that receives that gradient, which comes next.
  std::map<std::string, RoundingCounts> m_weightRounding;
  std::optional<RoundingCounts> m_pendingInputRounding;
};

}  // namespace amp
