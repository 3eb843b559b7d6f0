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
  double forward(LayerContext& ctx, const Tensor& output, const Tensor& target) {
    return compute(ctx, output, target, false);
  }
  // The same, added to the backend's step stats (StepStats::lossSum) instead of returned, so a
  // training step on a GPU does not wait for its loss (Backend::*IntoStep).
  void forwardIntoStep(LayerContext& ctx, const Tensor& output, const Tensor& target) {
    compute(ctx, output, target, true);
  }
  // Gradient w.r.t. the output, for dLoss = seed (the loss scale, times any loss weight).
  virtual Tensor backward(LayerContext& ctx, float seed) = 0;
  virtual bool classification() const = 0;
  virtual void releaseSaved() = 0;

 protected:
  // The forward pass; intoStep: the loss goes to the step stats and 0 is returned.
  virtual double compute(LayerContext& ctx, const Tensor& output, const Tensor& target,
                         bool intoStep) = 0;
};

class CrossEntropyLoss final : public Loss {
 public:
  std::string op() const override { return "cross_entropy"; }
  Tensor backward(LayerContext& ctx, float seed) override;
  bool classification() const override { return true; }
  void releaseSaved() override;

 protected:
  double compute(LayerContext& ctx, const Tensor& logits, const Tensor& labels,
                 bool intoStep) override;

 private:
  Tensor m_probs, m_labels;
  DType m_outputDtype = DType::F32;
};

class MseLoss final : public Loss {
 public:
  std::string op() const override { return "mse_loss"; }
  Tensor backward(LayerContext& ctx, float seed) override;
  bool classification() const override { return false; }
  void releaseSaved() override;

 protected:
  double compute(LayerContext& ctx, const Tensor& pred, const Tensor& target,
                 bool intoStep) override;

 private:
  Tensor m_pred, m_target;
  DType m_outputDtype = DType::F32;
};

std::unique_ptr<Loss> makeLoss(const std::string& name);  // "cross_entropy" | "mse"

}  // namespace amp
