#include "engine/nn/loss.h"

#include <stdexcept>

namespace amp {

namespace {
// Losses compute in fp32 whatever the region says, unless the user edited the policy: then
// the op list decides, and 16-bit outputs are widened for the fp32 loss kernel (the kernel's
// fp32 "opmath"), so a "what if" run still works and its trace shows the edited choice.
DType lossDtype(LayerContext& ctx, const std::string& op, DType in, int& casts, bool& widened) {
  const DType d = ctx.autocast.computeDtype(op, {in});
  widened = d != DType::F32;
  if (in != DType::F32) ++casts;
  return d;
}
}  // namespace

double CrossEntropyLoss::compute(LayerContext& ctx, const Tensor& logits, const Tensor& labels,
                                 bool intoStep) {
  m_outputDtype = logits.dtype();
  int casts = 0;
  bool widened = false;
  const DType d = lossDtype(ctx, op(), logits.dtype(), casts, widened);
  Tensor z = logits;
  if (widened && logits.dtype() != d) {
    // The edited policy asked for 16-bit: round the inputs as a 16-bit kernel would see them.
    z = ctx.backend.cast(logits, d, MemCategory::Activations);
  }
  m_probs = ctx.backend.empty(z.shape(), DType::F32, MemCategory::Activations);
  m_labels = labels;
  double loss = 0;
  if (intoStep) ctx.backend.crossEntropyForwardIntoStep(z, labels, m_probs);
  else loss = ctx.backend.crossEntropyForward(z, labels, m_probs);
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, "loss", op(), ctx.autocast.effectivePolicy(op()),
        ctx.autocast.enabled(), {logits.dtype()}, d, DType::F32, casts, 0,
        widened ? "policy edited: inputs rounded to 16 bits"
        : (casts ? "cast to fp32 fused into the loss kernel" : "")};
  });
  return loss;
}

Tensor CrossEntropyLoss::backward(LayerContext& ctx, float seed) {
  // The gradient is born in the logits' dtype: fp32 math, one rounding (the cast's backward).
  Tensor g = ctx.backend.empty(m_probs.shape(), m_outputDtype, MemCategory::Activations);
  ctx.backend.crossEntropyBackward(m_probs, m_labels, seed, g);
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, "loss", "cross_entropy_backward", CastPolicy::Fp32,
        false, {DType::F32}, DType::F32, m_outputDtype,
        m_outputDtype != DType::F32 ? 1 : 0, 0,
        m_outputDtype != DType::F32 ? "gradient rounded to the logits' dtype" : ""};
  });
  releaseSaved();
  return g;
}

void CrossEntropyLoss::releaseSaved() {
  m_probs = Tensor();
  m_labels = Tensor();
}

double MseLoss::compute(LayerContext& ctx, const Tensor& pred, const Tensor& target,
                        bool intoStep) {
  m_outputDtype = pred.dtype();
  int casts = 0;
  bool widened = false;
  const DType d = lossDtype(ctx, op(), pred.dtype(), casts, widened);
  m_pred = widened && pred.dtype() != d ? ctx.backend.cast(pred, d, MemCategory::Activations) : pred;
  m_target = target.dtype() == DType::F32 ? target
                                          : ctx.backend.cast(target, DType::F32, MemCategory::Workspace);
  double loss = 0;
  if (intoStep) ctx.backend.mseForwardIntoStep(m_pred, m_target);
  else loss = ctx.backend.mseForward(m_pred, m_target);
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Forward, "loss", op(), ctx.autocast.effectivePolicy(op()),
        ctx.autocast.enabled(), {pred.dtype(), target.dtype()}, d, DType::F32,
        casts, 0,
        widened ? "policy edited: inputs rounded to 16 bits"
        : (casts ? "cast to fp32 fused into the loss kernel" : "")};
  });
  return loss;
}

Tensor MseLoss::backward(LayerContext& ctx, float seed) {
  Tensor g = ctx.backend.empty(m_pred.shape(), m_outputDtype, MemCategory::Activations);
  ctx.backend.mseBackward(m_pred, m_target, seed, g);
  ctx.autocast.record([&] {
    return OpTraceEntry{TracePhase::Backward, "loss", "mse_loss_backward", CastPolicy::Fp32, false,
        {DType::F32}, DType::F32, m_outputDtype,
        m_outputDtype != DType::F32 ? 1 : 0, 0, ""};
  });
  releaseSaved();
  return g;
}

void MseLoss::releaseSaved() {
  m_pred = Tensor();
  m_target = Tensor();
}

std::unique_ptr<Loss> makeLoss(const std::string& name) {
  if (name == "cross_entropy") return std::make_unique<CrossEntropyLoss>();
  if (name == "mse") return std::make_unique<MseLoss>();
  throw std::invalid_argument("unknown loss '" + name + "' (expected cross_entropy or mse)");
}

}  // namespace amp
