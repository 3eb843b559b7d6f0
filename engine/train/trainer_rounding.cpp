// Trainer: what rounding to 16 bits did to a histogram step's gradients, end to end. A layer can
// only compare its own 16-bit result with the same product in fp32 from the same inputs
// (rounding_check.h), but in the underflow lesson the loss gradient is flushed to zero before
// any layer sees it: every later gradient is "exactly" the product of zeros. So on histogram
// steps of autocast runs the batch is replayed once with autocast off (fp32 compute from the
// fp32 master weights, the same loss scale and dropout seed) and each recorded gradient's zeros
// and infs are compared with the replay's: a value that is zero in the 16-bit run but not in
// fp32 was flushed by rounding somewhere on its way, and likewise for inf.
#include <algorithm>

#include "engine/train/trainer.h"

namespace amp {

namespace {

// The zero and inf counts of every activation gradient of the replay, by layer.
class ReplayObserver final : public TensorObserver {
 public:
  explicit ReplayObserver(Backend& be) : m_be(be) {}
  void activation(const std::string&, const Tensor&) override {}
  void activationGrad(const std::string& layer, const Tensor& dy) override {
    m_counts[layer] = zeroAndInf(m_be.histogram(dy, 1.0));
  }
  std::map<std::string, Trainer::ZeroInf>& counts() { return m_counts; }
  static Trainer::ZeroInf zeroAndInf(const ExponentHistogram& h) {
    return {h.counts[kHistBinZero], h.counts[kHistBinInf]};
  }

 private:
  Backend& m_be;
  std::map<std::string, Trainer::ZeroInf> m_counts;
};

}  // namespace

bool Trainer::replaysInFp32() const {
  // Pure fp16 has no fp32 weights to replay with (its layers' own counts stand); BatchNorm would
  // update its running statistics twice; with accumulation the recorded gradients sum several
  // batches, of which only the first is replayed.
  return m_config.usesAutocast() && m_config.train.accumulation == 1 && m_model->buffers().empty();
}

Trainer::Fp32Replay Trainer::replayInFp32(const Tensor& x, const Tensor& target, float seed,
                                          std::uint64_t stepSeed) {
  Fp32Replay replay;
  ReplayObserver observer(*m_be);
  // The fp32 reference of the step: no autocast, and no fp8 quantisation either.
  LayerContext ctx{*m_be, m_autocast, true, &observer, stepSeed, nullptr};
  const bool tracing = m_traceNext;
  m_autocast.setTracing(false);  // the replay is no part of the step's dtype trace
  m_model->zeroGrad();
  Tensor out = m_model->forward(ctx, x);  // outside any AutocastRegion: fp32 throughout
  m_loss->forward(ctx, out, target);
  m_model->backward(ctx, m_loss->backward(ctx, seed));
  for (Parameter* p : m_model->parameters())
    if (p->grad.defined())
      replay.weightGrads[p->name] = ReplayObserver::zeroAndInf(m_be->histogram(p->grad, 1.0));
  replay.activationGrads = std::move(observer.counts());
  m_model->zeroGrad();
  m_model->releaseSaved();
  m_loss->releaseSaved();
  m_autocast.setTracing(tracing);
  return replay;
}

void Trainer::applyFp32Replay(const Fp32Replay& replay, std::vector<HistogramRecord>& records) {
  for (HistogramRecord& r : records) {
    const auto& counts = r.kind == HistogramKind::WeightGrad ? replay.weightGrads
                         : r.kind == HistogramKind::ActivationGrad ? replay.activationGrads
                                                                   : decltype(replay.weightGrads){};
    const auto it = counts.find(r.tensor);
    if (it == counts.end()) continue;
    const ZeroInf now = ReplayObserver::zeroAndInf(r.scaled);
    // Rounding only ever adds zeros and infs; a few values can differ the other way where the
    // 16-bit forward pass moved a value across zero (ReLU), hence the floor at 0.
    r.flushedToZero = std::max<std::int64_t>(0, now.zeros - it->second.zeros);
    r.roundedToInf = std::max<std::int64_t>(0, now.infs - it->second.infs);
  }
}

}  // namespace amp
