// Losses. autocast puts them on its fp32 list: the model's output is cast to fp32 first, and
// the loss gradient is cast back to the output's dtype on the way down (the cast's backward).
#pragma once

#include <memory>
#include <string>

#include "engine/nn/layer.h"

namespace amp {

class Loss {
 public:
  virtual ~Loss() = default;
  virtual std::string op() const = 0;  // autocast op name: "cross_entropy", "mse_loss"
  // Mean loss over the batch, in fp32 (returned as double for reporting).
  virtual double forward(LayerContext& ctx, const Tensor& output, const Tensor& target) = 0;
  // Gradient w.r.t. the output, for dLoss = seed (the loss scale, times any loss weight).
  virtual Tensor backward(LayerContext& ctx, float seed) = 0;
  virtual bool classification() const = 0;
  virtual void releaseSaved() = 0;
};

class CrossEntropyLoss final : public Loss {
 public:
  std::string op() const override { return "cross_entropy"; }
  double forward(LayerContext& ctx, const Tensor& logits, const Tensor& labels) override;
  Tensor backward(LayerContext& ctx, float seed) override;
  bool classification() const override { return true; }
  void releaseSaved() override;

 private:
  Tensor m_probs, m_labels;
  DType m_outputDtype = DType::F32;
};

class MseLoss final : public Loss {
 public:
  std::string op() const override { return "mse_loss"; }
  double forward(LayerContext& ctx, const Tensor& pred, const Tensor& target) override;
  Tensor backward(LayerContext& ctx, float seed) override;
  bool classification() const override { return false; }
  void releaseSaved() override;

 private:
  Tensor m_pred, m_target;
  DType m_outputDtype = DType::F32;
};

std::unique_ptr<Loss> makeLoss(const std::string& name);  // "cross_entropy" | "mse"

}  // namespace amp
