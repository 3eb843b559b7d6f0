// Trainer: evaluation on the test set and the diagnosis of a diverged step.
#include <chrono>
#include <cmath>

#include "engine/train/trainer.h"

#include "engine/data/token_windows.h"

namespace amp {

namespace {

// Finds the first layer whose output holds a non-finite value.
class NonFiniteFinder final : public TensorObserver {
 public:
  explicit NonFiniteFinder(Backend& be) : m_be(be) {}
  void activation(const std::string& layer, const Tensor& y) override {
    if (m_found.empty() && m_be.countNonFinite(y)) m_found = layer;
  }
  void activationGrad(const std::string&, const Tensor&) override {}
  const std::string& found() const { return m_found; }

 private:
  Backend& m_be;
  std::string m_found;
};

}  // namespace

EvalResult Trainer::evaluate() {
  EvalResult r;
  const Dataset& test = m_data.test;
  if (test.count == 0) return r;
  const auto started = std::chrono::steady_clock::now();
  struct Timer {  // records the evaluation's wall time however it ends
    const std::chrono::steady_clock::time_point& t0;
    double& out;
    ~Timer() { out = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  } timer{started, m_lastEvalSeconds};
  // Token data: a batch of windows is a batch of window * T positions, each with 256 logits.
  const std::int64_t kEvalBatch = test.isTokenData() ? 32 : 1000;
  const std::int64_t fs = test.featureSize();
  const bool wasTracing = m_autocast.tracing();
  m_autocast.setTracing(false);
  LayerContext ctx{*m_be, m_autocast, /*training=*/false, nullptr, 0, m_fp8.get()};
  double lossSum = 0;
  std::int64_t correct = 0;
  for (std::int64_t start = 0; start < test.count; start += kEvalBatch) {
    const std::int64_t n = std::min(kEvalBatch, test.count - start);
    Shape xs{n};
    xs.insert(xs.end(), test.sampleShape.begin(), test.sampleShape.end());
    Tensor x, target;
    if (test.isTokenData()) {
      const TokenWindows w = tokenWindows(test, start, n);
      x = m_be->fromHostInt(w.inputs, xs, MemCategory::Workspace);
      target = m_be->fromHostInt(w.labels, {std::int64_t(w.labels.size())}, MemCategory::Workspace);
    } else {
      std::span<const float> xv(test.features.data() + start * fs, static_cast<std::size_t>(n * fs));
      x = m_be->fromHost(xv, xs, inputDtype(), MemCategory::Workspace);
      if (test.isClassification())
        target = m_be->fromHostInt(std::span<const std::int32_t>(test.labels.data() + start, n),
                                   {n}, MemCategory::Workspace);
      else
        target = m_be->fromHost(std::span<const float>(test.targets.data() + start * test.targetDim,
                                                       static_cast<std::size_t>(n * test.targetDim)),
                                {n, test.targetDim}, DType::F32, MemCategory::Workspace);
    }
    AutocastRegion region(m_autocast, m_config.usesAutocast(), m_config.lowDtype());
    Tensor out = m_model->forward(ctx, x);
    lossSum += m_loss->forward(ctx, out, target) * double(n);
    if (test.isClassification()) correct += m_be->countCorrect(out, target);
    m_loss->releaseSaved();
    m_model->releaseSaved();
  }
  m_autocast.setTracing(wasTracing);
  r.samples = test.count;
  r.loss = lossSum / double(test.count);
  // Token data: the share of positions whose most likely next byte is the right one.
  const std::int64_t predictions = test.count * (test.isTokenData() ? test.sequence : 1);
  if (test.isClassification()) r.accuracy = double(correct) / double(predictions);
  return r;
}

DecisionMap Trainer::decisionMap(int resolution) {
  DecisionMap map;
  const Dataset& train = m_data.train;
  if (!hasDecisionPlane(train) || resolution < 2) return map;
  map.step = m_step;
  map.width = map.height = resolution;
  map.classes = train.numClasses;
  decisionPlane(train.features, 0.08f, map.xMin, map.xMax, map.yMin, map.yMax);
  const std::int64_t n = std::int64_t(resolution) * resolution;
  std::vector<float> grid(std::size_t(2 * n));
  for (int row = 0; row < resolution; ++row)
    for (int col = 0; col < resolution; ++col) {
      const std::size_t i = std::size_t(row) * std::size_t(resolution) + std::size_t(col);
      grid[2 * i] = map.cellX(col);
      grid[2 * i + 1] = map.cellY(row);
    }
  const bool wasTracing = m_autocast.tracing();
  m_autocast.setTracing(false);
  LayerContext ctx{*m_be, m_autocast, /*training=*/false, nullptr, 0, m_fp8.get()};
  Tensor x = m_be->fromHost(grid, {n, 2}, inputDtype(), MemCategory::Workspace);
  std::vector<float> logits;
  {
    AutocastRegion region(m_autocast, m_config.usesAutocast(), m_config.lowDtype());
    logits = m_be->toHostFloat(m_model->forward(ctx, x));
  }
  m_model->releaseSaved();
  m_autocast.setTracing(wasTracing);
  classesFromLogits(logits, int(logits.size() / std::size_t(n)), map.cls, map.confidence);
  return map;
}

std::vector<float> Trainer::nextTokenLogits(const std::vector<std::int32_t>& context) {
  const auto T = static_cast<std::int64_t>(context.size());
  const bool wasTracing = m_autocast.tracing();
  m_autocast.setTracing(false);
  LayerContext ctx{*m_be, m_autocast, /*training=*/false, nullptr, 0, m_fp8.get()};
  Tensor x = m_be->fromHostInt(context, {1, T}, MemCategory::Workspace);
  std::vector<float> logits;
  {
    AutocastRegion region(m_autocast, m_config.usesAutocast(), m_config.lowDtype());
    logits = m_be->toHostFloat(m_model->forward(ctx, x));
  }
  m_model->releaseSaved();
  m_autocast.setTracing(wasTracing);
  const std::size_t vocab = logits.size() / std::size_t(T);
  return std::vector<float>(logits.end() - std::ptrdiff_t(vocab), logits.end());  // the last position's
}

std::string Trainer::diagnoseNonFinite() {
  for (Parameter* p : m_model->parameters())
    if (m_be->countNonFinite(p->value)) return p->name + " (weights)";
  // Weights are finite: replay the last batch's forward pass and find the first bad output.
  NonFiniteFinder finder(*m_be);
  LayerContext ctx{*m_be, m_autocast, true, &finder, 0, m_fp8.get()};
  const Fp8Context::Quiet quiet(m_fp8.get());  // quantised as the step was, nothing recorded
  Tensor x = uploadInput(m_batch);
  {
    AutocastRegion region(m_autocast, m_config.usesAutocast(), m_config.lowDtype());
    m_model->forward(ctx, x);
  }
  m_model->releaseSaved();
  if (!finder.found().empty()) {
    const auto& layers = m_model->layers();
    for (const auto& l : layers)
      if (l->name() == finder.found())
        return "output of layer " + l->name() + " (" + l->describe() + ")";
  }
  return "the loss (every layer output was finite)";
}

}  // namespace amp
