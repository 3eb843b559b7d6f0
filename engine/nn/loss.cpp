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

double CrossEntropyLoss::forward(LayerContext& ctx, const Tensor& logits, const Tensor& labels) {
  m_outputDtype = logits.dtype();
  int casts = 0;
  bool widened = false;
  const DType d = lossDtype(ctx, op(), logits.dtype(), casts, widened);
  Tensor z = logits.dtype() == DType::F32 ? logits
                                          : ctx.backend.cast(logits, DType::F32, MemCategory::Activations);
  if (d != DType::F32) {
    // The edited policy asked for 16-bit: round the inputs as a 16-bit kernel would see them.
    Tensor low = ctx.backend.cast(z, d, MemCategory::Workspace);
    z = ctx.backend.cast(low, DType::F32, MemCategory::Activations);
  }
  m_probs = ctx.backend.empty(z.shape(), DType::F32, MemCategory::Activations);
  m_labels = labels;
  const double loss = ctx.backend.crossEntropyForward(z, labels, m_probs);
  ctx.autocast.record({TracePhase::Forward, "loss", op(), ctx.autocast.effectivePolicy(op()),
                       ctx.autocast.enabled(), {logits.dtype()}, d, DType::F32, casts, 0,
                       widened ? "policy edited: inputs rounded to 16 bits" : ""});
  return loss;
}

Tensor CrossEntropyLoss::backward(LayerContext& ctx, float seed) {
  Tensor g = ctx.backend.empty(m_probs.shape(), DType::F32, MemCategory::Activations);
  ctx.backend.crossEntropyBackward(m_probs, m_labels, seed, g);
  ctx.autocast.record({TracePhase::Backward, "loss", "cross_entropy_backward", CastPolicy::Fp32,
                       false, {DType::F32}, DType::F32, m_outputDtype,
                       m_outputDtype != DType::F32 ? 1 : 0, 0,
                       m_outputDtype != DType::F32 ? "gradient cast to the logits' dtype" : ""});
  releaseSaved();
  if (m_outputDtype == DType::F32) return g;
  return ctx.backend.cast(g, m_outputDtype, MemCategory::Activations);
}

void CrossEntropyLoss::releaseSaved() {
  m_probs = Tensor();
  m_labels = Tensor();
}

double MseLoss::forward(LayerContext& ctx, const Tensor& pred, const Tensor& target) {
  m_outputDtype = pred.dtype();
  int casts = 0;
  bool widened = false;
  const DType d = lossDtype(ctx, op(), pred.dtype(), casts, widened);
  Tensor p = pred.dtype() == DType::F32 ? pred
                                        : ctx.backend.cast(pred, DType::F32, MemCategory::Activations);
  if (d != DType::F32) {
    Tensor low = ctx.backend.cast(p, d, MemCategory::Workspace);
    p = ctx.backend.cast(low, DType::F32, MemCategory::Activations);
  }
  m_pred = p;
  m_target = target.dtype() == DType::F32 ? target
                                          : ctx.backend.cast(target, DType::F32, MemCategory::Activations);
  const double loss = ctx.backend.mseForward(m_pred, m_target);
  ctx.autocast.record({TracePhase::Forward, "loss", op(), ctx.autocast.effectivePolicy(op()),
                       ctx.autocast.enabled(), {pred.dtype(), target.dtype()}, d, DType::F32,
                       casts, 0, widened ? "policy edited: inputs rounded to 16 bits" : ""});
  return loss;
}

Tensor MseLoss::backward(LayerContext& ctx, float seed) {
  Tensor g = ctx.backend.empty(m_pred.shape(), DType::F32, MemCategory::Activations);
  ctx.backend.mseBackward(m_pred, m_target, seed, g);
  ctx.autocast.record({TracePhase::Backward, "loss", "mse_loss_backward", CastPolicy::Fp32, false,
                       {DType::F32}, DType::F32, m_outputDtype,
                       m_outputDtype != DType::F32 ? 1 : 0, 0, ""});
  releaseSaved();
  if (m_outputDtype == DType::F32) return g;
  return ctx.backend.cast(g, m_outputDtype, MemCategory::Activations);
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
