#include "ui/charts/synthetic_runs.h"

#include <cmath>
#include <random>

#include "ui/run_data.h"

namespace amp::ui {

namespace {

constexpr double kParams = 1.05e6;  // a small MLP

MemorySnapshot memoryFor(PrecisionMode mode, double activations, double workspace) {
  const bool half = mode != PrecisionMode::Fp32;
  MemorySnapshot m;
  const auto set = [&](MemCategory c, double bytes) {
    m.current[std::size_t(c)] = std::int64_t(bytes);
    m.peak[std::size_t(c)] = std::int64_t(bytes * (c == MemCategory::Activations ? 1.15 : 1.0));
  };
  set(MemCategory::Weights, kParams * (half ? 2 : 4));
  set(MemCategory::MasterWeights,
      mode == PrecisionMode::AmpFp16 || mode == PrecisionMode::AmpBf16 ? kParams * 4 : 0);
  set(MemCategory::Gradients, kParams * (mode == PrecisionMode::PureFp16 ? 2 : 4));
  set(MemCategory::Activations, activations);
  set(MemCategory::OptimizerState, kParams * 8);  // Adam's two moments in fp32
  set(MemCategory::Workspace, workspace);
  for (int c = 0; c < kMemCategoryCount; ++c) {
    m.totalCurrent += m.current[std::size_t(c)];
    m.totalPeak += m.peak[std::size_t(c)];
  }
  return m;
}

}  // namespace

void fillSyntheticRun(RunData& run, const SyntheticRunOptions& opt) {
  std::mt19937_64 rng(opt.seed);
  std::normal_distribution<double> gauss;
  std::uniform_real_distribution<double> uniform;
  run.name = opt.name;
  run.color = opt.color;
  run.config.mode = opt.mode;
  run.config.name = opt.name.toStdString();
  run.config.train.steps = opt.steps;
  run.config.train.histogramEvery = opt.histogramEvery;
  run.config.train.evalEvery = opt.evalEvery;
  run.config.scaler.growthInterval = opt.growthInterval;
  run.totalSteps = opt.steps;

  const bool fp16 = opt.mode == PrecisionMode::AmpFp16 || opt.mode == PrecisionMode::PureFp16;
  const DType stored = opt.mode == PrecisionMode::Fp32      ? DType::F32
                       : opt.mode == PrecisionMode::AmpBf16 ? DType::BF16
                                                            : DType::F16;
  const double baseMs = opt.mode == PrecisionMode::Fp32      ? 14.0
                        : opt.mode == PrecisionMode::AmpBf16 ? 6.8
                                                             : 7.4;
  const double tau = double(opt.steps) * 0.15;
  std::vector<std::int64_t> spikeAt;
  for (int i = 0; i < opt.spikes; ++i) spikeAt.push_back(1 + std::int64_t(uniform(rng) * double(opt.steps)));

  double scale = fp16 ? 65536.0 : 1.0;
  int tracker = 0;
  for (std::int64_t step = 1; step <= opt.steps; ++step) {
    StepMetrics m;
    m.step = step;
    const double t = double(step);
    const double clean = 0.12 + 2.2 * std::exp(-t / tau);
    m.loss = std::max(0.01, clean * (1 + 0.12 * gauss(rng)));
    for (std::int64_t s : spikeAt)
      if (s == step) m.loss *= 4;
    m.scale = float(scale);
    if (fp16) {
      // Gradients overflow fp16 often once the scale passes 2^15, rarely below it.
      const double pOverflow = scale > 32768.0 ? 0.04 : 0.0004;
      if (uniform(rng) < pOverflow) {
        m.skipped = true;
        m.scaleEvent = "backoff";
        scale *= 0.5;
        tracker = 0;
      } else if (++tracker >= opt.growthInterval) {
        m.scaleEvent = "growth";
        scale *= 2;
        tracker = 0;
      }
    }
    m.scaleAfter = float(scale);
    m.growthTracker = tracker;
    m.gradNorm = m.skipped ? INFINITY : 1.5 * std::exp(-t / tau) + 0.2;
    m.lr = 1e-3;
    m.stepMs =
        baseMs * (1 + 0.04 * gauss(rng)) * (step <= 2 ? 4.0 : 1.0) * (uniform(rng) < 0.002 ? 2.5 : 1.0);
    m.samplesPerS = 256.0 / m.stepMs * 1000.0;
    // After each step memory is flat for a fixed batch size; an evaluation step needs a larger
    // workspace, and the first steps grow caches.
    const bool evalStep = opt.evalEvery > 0 && step % opt.evalEvery == 0;
    m.memory = memoryFor(opt.mode, 24e6 * (stored == DType::F32 ? 1.0 : 0.5),
                         (step < 3 ? 0.5 : 1.0) * (evalStep ? 3e6 : 1.5e6));
    if (opt.evalEvery > 0 && step % opt.evalEvery == 0) {
      m.testLoss = clean * 1.08;
      m.testAcc = std::min(0.99, 0.55 + 0.4 * (1 - std::exp(-t / (tau * 1.5))) + 0.004 * gauss(rng));
    }
    if (opt.histogramEvery > 0 && step % opt.histogramEvery == 0) {
      const double progress = t / double(opt.steps);
      struct Kind {
        HistogramKind kind;
        double mean, sigma;
      };
      // Unscaled log2 magnitudes: gradients shrink as the loss falls; activations stay O(1).
      const Kind kinds[] = {{HistogramKind::WeightGrad, -13 - 6 * progress, 3.0},
                            {HistogramKind::ActivationGrad, -17 - 5 * progress, 3.5},
                            {HistogramKind::Activation, -1.5, 2.0}};
      for (int layer = 0; layer < 3; ++layer) {
        for (const Kind& k : kinds) {
          HistogramRecord r;
          r.kind = k.kind;
          r.tensor = k.kind == HistogramKind::WeightGrad ? std::to_string(layer * 2) + ".weight"
                                                         : std::to_string(layer * 2);
          r.dtype = k.kind == HistogramKind::Activation || !fp16 ? stored : DType::F16;
          const double gradScale = k.kind == HistogramKind::Activation ? 1.0 : m.scale;
          for (int i = 0; i < opt.histogramSamples; ++i) {
            const double v = std::exp2(k.mean - layer + k.sigma * gauss(rng)) * (uniform(rng) < 0.5 ? -1 : 1);
            const double zero = uniform(rng) < 0.01 ? 0.0 : 1.0;  // a few exact zeros (ReLU)
            r.unscaled.add(v * zero);
            r.scaled.add(v * zero * gradScale);
          }
          m.histograms.push_back(std::move(r));
        }
      }
    }
    run.append(m);
  }
  run.status = RunStatus::Finished;
}

}  // namespace amp::ui
