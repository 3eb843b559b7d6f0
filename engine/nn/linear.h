// y = x · Wᵀ + b, like torch.nn.Linear: W (out, in), b (out); x (batch, in) -> y (batch, out).
#pragma once

#include "engine/backend/quantized_tensor.h"
#include "engine/nn/layer.h"

namespace amp {

class Linear final : public Layer {
 public:
  Linear(std::int64_t in, std::int64_t out, bool bias = true);
  std::string kind() const override { return "Linear"; }
  std::string describe() const override;
  Shape outputShape(const Shape& in) const override;
  Tensor forward(LayerContext& ctx, const Tensor& x) override;
  Tensor backward(LayerContext& ctx, const Tensor& dy, bool needInputGrad) override;
  std::vector<Parameter*> parameters() override;
  void initialize(Backend& be, Rng& rng, DType dtype, MemCategory category) override;
  void releaseSaved() override;

  // GPT's initialisation (nanoGPT): weight ~ normal(0, std), bias 0, instead of PyTorch's
  // default uniform bounds.
  void setNormalInit(double std) { m_normalStd = std; }
  // Computes with `shared` (another layer's parameter: GPT's LM head uses the token embedding)
  // instead of a weight of its own. The owner lists it; this layer names it in tiedParameters,
  // so a state_dict still holds "<name>.weight" as PyTorch's does.
  void tieWeight(Parameter* shared) { m_tied = shared; }
  std::vector<std::pair<std::string, Parameter*>> tiedParameters() override;
  bool tied() const { return m_tied != nullptr; }

  std::int64_t inFeatures() const { return m_in; }
  std::int64_t outFeatures() const { return m_out; }
  bool hasBias() const { return m_hasBias; }

 private:
  std::int64_t m_in, m_out;
  bool m_hasBias;
  Parameter m_weight, m_bias;
  Parameter* m_tied = nullptr;
  double m_normalStd = 0;
  Parameter& weight() { return m_tied ? *m_tied : m_weight; }
  // amp.mode=fp8 (linear_fp8.cpp): the three GEMMs on quantised operands.
  Tensor forwardFp8(LayerContext& ctx, const Tensor& x);
  Tensor backwardFp8(LayerContext& ctx, const Tensor& dy, bool needInputGrad);
  Tensor gemmFp8(LayerContext& ctx, const QuantizedTensor& a, bool transA, const QuantizedTensor& b, bool transB,
                 const Tensor* bias, MemCategory cat);
  // fp8, saved for backward as the hardware holds them: the input quantised for the weight
  // gradient (per-tensor recipes: the forward's own) and, for per-tensor recipes, the weight.
  QuantizedTensor m_fp8Xq, m_fp8Wq;
  // Saved by forward for backward: the input and weight as the GEMM saw them.
  Tensor m_savedX, m_savedW;
  DType m_inputDtype = DType::F32;
  Shape m_inputShape;
};

}  // namespace amp
