// What rounding to 16 bits did to the gradients a layer computes: values flushed to zero and
// values rounded to inf, counted against the same product with fp32 output. An exact hand-made
// case, the underflow lesson's measured fractions, and the counts' way through the JSON files.
#include <gtest/gtest.h>

#include <QJsonObject>
#include <cmath>

#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/io/metrics_json.h"
#include "engine/io/run_record.h"
#include "engine/nn/linear.h"
#include "engine/train/histogram_recorder.h"
#include "engine/train/trainer.h"

using namespace amp;

namespace {

// Sums what a layer reports, as the histogram recorder would receive it.
class CountingObserver final : public TensorObserver {
 public:
  void activation(const std::string&, const Tensor&) override {}
  void activationGrad(const std::string&, const Tensor&) override {}
  void weightGradRounding(const std::string& param, const RoundingCounts& c) override {
    weights[param] += c;
  }
  void inputGradRounding(const RoundingCounts& c) override { input += c; }
  std::map<std::string, RoundingCounts> weights;
  RoundingCounts input;
};

const HistogramRecord* findRecord(const StepMetrics& m, const std::string& tensor, HistogramKind k) {
  for (const auto& h : m.histograms)
    if (h.tensor == tensor && h.kind == k) return &h;
  return nullptr;
}

double flushedFraction(const HistogramRecord& h) {
  return double(h.flushedToZero) / double(h.unscaled.total);
}

}  // namespace

// x = [2^-13, 512], dy = [2^-13, 256], W = diag(2^-13, 512), no bias, under autocast fp16:
// dW = dyᵀx = [[2^-26, 2^-4], [2^-5, 131072]] and dx = dy·W = [2^-26, 131072]. In fp16 2^-26
// (below half the smallest subnormal, 2^-25) rounds to 0 and 131072 (> 65504) to inf: exactly
// one of each in either result.
TEST(RoundingCounts, KnownTinyAndHugeProductsAreCountedExactly) {
  auto be = makeCpuBackend();
  Autocast autocast;
  Linear lin(2, 2, /*bias=*/false);
  lin.setName("0");
  Rng rng(1);
  lin.initialize(*be, rng, DType::F32, MemCategory::MasterWeights);
  Parameter& w = *lin.parameters()[0];
  be->uploadFloat(w.value, std::vector<float>{std::ldexp(1.f, -13), 0.f, 0.f, 512.f});
  const float tiny = std::ldexp(1.f, -13);
  CountingObserver obs;
  LayerContext ctx{*be, autocast, true, &obs, 0};
  // Twice: the first backward writes fp32 straight into the empty .grad and rounds in place,
  // the second computes a 16-bit gradient and adds it (the two paths Linear takes).
  for (int pass = 1; pass <= 2; ++pass) {
    SCOPED_TRACE("pass " + std::to_string(pass));
    Tensor x = be->fromHost(std::vector<float>{tiny, 512.f}, {1, 2}, DType::F32, MemCategory::Workspace);
    {
      AutocastRegion region(autocast, true, DType::F16);
      lin.forward(ctx, x);
    }
    Tensor dy = be->fromHost(std::vector<float>{tiny, 256.f}, {1, 2}, DType::F16, MemCategory::Workspace);
    lin.backward(ctx, dy, /*needInputGrad=*/true);
    EXPECT_EQ(obs.weights["0.weight"].flushedToZero, pass);
    EXPECT_EQ(obs.weights["0.weight"].roundedToInf, pass);
    EXPECT_EQ(obs.input.flushedToZero, pass);
    EXPECT_EQ(obs.input.roundedToInf, pass);
  }
}

TEST(RoundingCounts, NothingIsMeasuredInFp32OrWithoutAnObserver) {
  auto be = makeCpuBackend();
  Autocast autocast;
  Linear lin(2, 2);
  lin.setName("0");
  Rng rng(1);
  lin.initialize(*be, rng, DType::F32, MemCategory::Weights);
  CountingObserver obs;
  LayerContext ctx{*be, autocast, true, &obs, 0};
  Tensor x = be->fromHost(std::vector<float>{1e-30f, 1e30f}, {1, 2}, DType::F32, MemCategory::Workspace);
  lin.forward(ctx, x);
  Tensor dy = be->fromHost(std::vector<float>{1e-30f, 1.f}, {1, 2}, DType::F32, MemCategory::Workspace);
  lin.backward(ctx, dy, true);
  EXPECT_TRUE(obs.weights.empty());  // fp32 rounds nothing away that a 16-bit result would
}

// The underflow lesson: the loss is multiplied by 1e-6, so without loss scaling fp16 flushes
// practically every one of 0.weight's gradients to zero; with dynamic scaling (65536) almost
// none. fp32 measures nothing (-1).
TEST(RoundingCounts, UnderflowLessonFlushesEverythingWithoutScalingAndLittleWithIt) {
  const Preset* p = findPreset("underflow");
  ASSERT_NE(p, nullptr);
  auto firstStep = [&](int variant) {
    RunConfig c = presetConfig(*p, &p->variants[std::size_t(variant)]);
    c.train.steps = 1;
    Trainer t(c);
    return t.step();
  };
  const StepMetrics f32 = firstStep(0), noscale = firstStep(1), dynamic = firstStep(2);
  const HistogramRecord* a = findRecord(noscale, "0.weight", HistogramKind::WeightGrad);
  const HistogramRecord* b = findRecord(dynamic, "0.weight", HistogramKind::WeightGrad);
  const HistogramRecord* c = findRecord(f32, "0.weight", HistogramKind::WeightGrad);
  ASSERT_TRUE(a && b && c);
  EXPECT_GT(flushedFraction(*a), 0.95);
  EXPECT_LT(flushedFraction(*b), 0.05);
  EXPECT_EQ(a->roundedToInf, 0);
  EXPECT_EQ(b->roundedToInf, 0);
  EXPECT_EQ(c->flushedToZero, -1);
  // The activation gradients are measured too: the loss gradient itself (into the last layer)
  // is where the unscaled run's values are flushed.
  const HistogramRecord* lossGrad = findRecord(noscale, "4", HistogramKind::ActivationGrad);
  ASSERT_NE(lossGrad, nullptr);
  EXPECT_GT(double(lossGrad->flushedToZero) / double(lossGrad->unscaled.total), 0.5);
  const HistogramRecord* act = findRecord(noscale, "1", HistogramKind::ActivationGrad);
  ASSERT_NE(act, nullptr);
  EXPECT_GT(double(act->flushedToZero) / double(act->unscaled.total), 0.5);
  const HistogramRecord* actDynamic = findRecord(dynamic, "1", HistogramKind::ActivationGrad);
  ASSERT_NE(actDynamic, nullptr);
  EXPECT_LT(double(actDynamic->flushedToZero) / double(actDynamic->unscaled.total), 0.05);
}

TEST(RoundingCounts, CountsTravelThroughTheHistogramFilesAndOldLinesReadAsUnmeasured) {
  HistogramRecord h;
  h.tensor = "0.weight";
  h.dtype = DType::F32;
  h.scaled.add(1.0);
  h.unscaled.add(1.0);
  h.flushedToZero = 4095;
  h.roundedToInf = 3;
  QJsonObject o = histogramToJson(20, h);
  HistogramRecord back = histogramFromJson(o);
  EXPECT_EQ(back.flushedToZero, 4095);
  EXPECT_EQ(back.roundedToInf, 3);
  o.remove("flushed_to_zero");
  o.remove("rounded_to_inf");
  back = histogramFromJson(o);  // a file written before the counts existed
  EXPECT_EQ(back.flushedToZero, -1);
  EXPECT_EQ(back.roundedToInf, -1);
}

// The fp32 replay on histogram steps is telemetry: the run trains exactly as without it, and
// its time and memory are not charged to the step.
TEST(RoundingCounts, TheFp32ReplayDoesNotChangeTraining) {
  const Preset* p = findPreset("underflow");
  RunConfig with = presetConfig(*p, &p->variants[2]);
  with.train.steps = 6;
  with.train.histogramEvery = 1;
  RunConfig without = with;
  without.train.histogramEvery = 0;
  Trainer a(with), b(without);
  for (int i = 0; i < 6; ++i) {
    const StepMetrics ma = a.step(), mb = b.step();
    EXPECT_EQ(ma.loss, mb.loss) << "step " << i + 1;
    EXPECT_EQ(ma.scaleAfter, mb.scaleAfter) << "step " << i + 1;
    const HistogramRecord* w = findRecord(ma, "0.weight", HistogramKind::WeightGrad);
    ASSERT_NE(w, nullptr);
    EXPECT_GE(w->flushedToZero, 0);
  }
  const auto wa = a.backend().toHostFloat(a.model().parameters()[0]->value);
  const auto wb = b.backend().toHostFloat(b.model().parameters()[0]->value);
  EXPECT_EQ(wa, wb);
}

// Pure fp16 has no fp32 weights to replay with: its layers' own counts (16-bit result against
// the fp32-output product of the same inputs) fill the weight-gradient records instead.
TEST(RoundingCounts, PureFp16RecordsTheLayersOwnCounts) {
  const Preset* p = findPreset("underflow");
  RunConfig c = presetConfig(*p, &p->variants[1]);
  setConfigValue(c, "amp.mode", "pure_fp16");
  c.train.steps = 1;
  Trainer t(c);
  const StepMetrics m = t.step();
  for (const char* name : {"0.weight", "2.weight", "4.weight"}) {
    const HistogramRecord* r = findRecord(m, name, HistogramKind::WeightGrad);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_EQ(r->dtype, DType::F16) << name;
    EXPECT_GE(r->flushedToZero, 0) << name;
    EXPECT_GE(r->roundedToInf, 0) << name;
  }
}

namespace amp {
namespace {
// With gradient accumulation each micro-batch's product was counted into one record whose
// histogram holds the accumulated gradient, so up to "flushed to 0: 400%" with accumulation=4:
// a bound that holds whatever the data (this case flushes too little to exceed it when summed).
TEST(RoundingCounts, AccumulatedGradientsCountEachElementOnce) {
  const Preset* p = findPreset("underflow");
  RunConfig c = presetConfig(*p, &p->variants[1]);  // fp16 without scaling
  setConfigValue(c, "amp.mode", "pure_fp16");
  c.train.lossWeight = 1e-3;  // products partly below fp16's subnormals: some flush, not all
  c.train.accumulation = 4;
  c.train.steps = 1;
  Trainer t(c);
  const StepMetrics m = t.step();
  std::int64_t flushed = 0;
  for (const char* name : {"0.weight", "2.weight", "4.weight"}) {
    const HistogramRecord* r = findRecord(m, name, HistogramKind::WeightGrad);
    ASSERT_NE(r, nullptr);
    ASSERT_GE(r->flushedToZero, 0);
    EXPECT_LE(r->flushedToZero, r->scaled.total) << name;
    flushed += r->flushedToZero;
  }
  EXPECT_GT(flushed, 0);  // the case measures something (96 of 4352 here)
}
}  // namespace
}  // namespace amp
