#include "engine/io/tensorboard_steps.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

namespace amp {

std::optional<TbField> tensorBoardField(const std::string& tag) {
  using F = TbField;
  static const std::map<std::string, F> aliases = {
      {"loss", F::Loss}, {"train/loss", F::Loss}, {"train_loss", F::Loss},
      {"loss/train", F::Loss}, {"training_loss", F::Loss}, {"train/loss_step", F::Loss},
      // AMP Studio's export: the scale before the step, beside the one after.
      {"amp/loss_scale", F::ScaleBefore}, {"amp/loss_scale_after", F::ScaleAfter},
      // Everyone else logs scaler.get_scale() after scaler.update(): the scale after the step.
      {"loss_scale", F::ScaleAfter}, {"scale", F::ScaleAfter}, {"grad_scale", F::ScaleAfter},
      {"scaler/scale", F::ScaleAfter}, {"train/loss_scale", F::ScaleAfter}, {"amp/scale", F::ScaleAfter},
      {"amp/grad_scale", F::ScaleAfter}, {"grad_scaler/scale", F::ScaleAfter},
      {"amp/growth_tracker", F::GrowthTracker},
      {"amp/skipped", F::Skipped}, {"skipped", F::Skipped}, {"train/skipped", F::Skipped},
      {"train/grad_norm", F::GradNorm}, {"grad_norm", F::GradNorm}, {"gradient_norm", F::GradNorm},
      {"train/lr", F::Lr}, {"lr", F::Lr}, {"learning_rate", F::Lr}, {"train/learning_rate", F::Lr},
      {"speed/step_ms", F::StepMs}, {"step_ms", F::StepMs},
      {"speed/samples_per_s", F::SamplesPerS}, {"samples_per_s", F::SamplesPerS}, {"throughput", F::SamplesPerS},
      {"test/loss", F::TestLoss}, {"val/loss", F::TestLoss}, {"val_loss", F::TestLoss},
      {"loss/test", F::TestLoss}, {"eval/loss", F::TestLoss}, {"valid/loss", F::TestLoss},
      {"test_loss", F::TestLoss}, {"loss/val", F::TestLoss},
      {"test/accuracy", F::TestAcc}, {"test/acc", F::TestAcc}, {"val/acc", F::TestAcc},
      {"val_acc", F::TestAcc}, {"val/accuracy", F::TestAcc}, {"eval/accuracy", F::TestAcc},
      {"accuracy/test", F::TestAcc}, {"test_acc", F::TestAcc}, {"test_accuracy", F::TestAcc},
      {"accuracy/val", F::TestAcc},
      {"amp/lost_update_frac", F::LostUpdates},
      // Our export's other scalars: the ampstudio/metrics lines carry them exactly.
      {"speed/gemm_gflops", F::Ignored}};
  std::string lower = tag;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (auto it = aliases.find(lower); it != aliases.end()) return it->second;
  if (lower.rfind("memory/", 0) == 0 || lower.rfind("memory_peak/", 0) == 0) return F::Ignored;
  return std::nullopt;
}

namespace {

bool isTraining(TbField f) {
  return f != TbField::Lr && f != TbField::TestLoss && f != TbField::TestAcc && f != TbField::Ignored;
}

void setField(StepMetrics& m, TbField f, double v) {
  switch (f) {
    case TbField::Loss: m.loss = v; break;
    case TbField::GrowthTracker: m.growthTracker = static_cast<int>(std::clamp(v, -1e9, 1e9)); break;
    case TbField::Skipped: m.skipped = v != 0; break;
    case TbField::GradNorm: m.gradNorm = v; break;
    case TbField::Lr: m.lr = v; break;
    case TbField::StepMs: m.stepMs = v; break;
    case TbField::SamplesPerS: m.samplesPerS = v; break;
    case TbField::TestLoss: m.testLoss = v; break;
    case TbField::TestAcc: m.testAcc = v; break;
    case TbField::LostUpdates: m.lostUpdateFrac = v; break;
    case TbField::ScaleBefore: case TbField::ScaleAfter: case TbField::Ignored: break;  // below
  }
}

}  // namespace

TbSteps tensorBoardSteps(const TbScalars& s) {
  TbSteps out;
  // The scale timeline: a scale before step k sits at 2k-1, after it at 2k+1 (so after(k-1) and
  // before(k) are the same point, 2k-1).
  std::map<std::int64_t, double> scaleAt;
  bool anyLoss = false;
  for (const auto& [step, fields] : s.values) {
    anyLoss = anyLoss || fields.count(TbField::Loss);
    if (auto it = fields.find(TbField::ScaleBefore); it != fields.end()) scaleAt[2 * step - 1] = it->second;
    if (auto it = fields.find(TbField::ScaleAfter); it != fields.end()) scaleAt[2 * step + 1] = it->second;
  }
  out.scaleLogged = !scaleAt.empty();
  for (const auto& [t, v] : scaleAt) out.scaleAboveOne = out.scaleAboveOne || v != 1;

  std::vector<std::int64_t> train;
  for (const auto& [step, fields] : s.values) {
    const bool isStep = anyLoss ? fields.count(TbField::Loss) > 0
                                : std::any_of(fields.begin(), fields.end(), [](const auto& f) { return isTraining(f.first); });
    if (isStep) train.push_back(step);
  }
  if (train.empty()) return out;

  // Each logged value goes to its own step when that is a training step, else to the training
  // step at or before it (the first one when none is before).
  std::map<std::int64_t, StepMetrics> steps;
  for (std::int64_t t : train) {
    StepMetrics& m = steps[t];
    m.step = t;
    m.loss = anyLoss ? 0.0 : std::nan("");
  }
  int moved = 0;
  for (const auto& [step, fields] : s.values) {
    auto it = std::upper_bound(train.begin(), train.end(), step);
    const std::int64_t target = it == train.begin() ? train.front() : *std::prev(it);
    if (target != step) ++moved;
    for (const auto& [f, v] : fields) {
      if (target != step && (f == TbField::Loss || f == TbField::Skipped || f == TbField::GrowthTracker)) continue;
      setField(steps[target], f, v);
      if (f == TbField::SamplesPerS) out.throughput = true;
      if (f == TbField::StepMs) out.stepTime = true;
    }
  }
  if (moved)
    out.warnings << QStringLiteral("%1 logged steps without a training loss (evaluations, lr): their values shown at the training step before them")
                        .arg(moved);

  // Scales: before(k) = the value at 2k-1 (after(k-1) or before(k)), after(k) = at 2k+1; an
  // unknown one carries the last value logged before it (the first logged value at the start).
  auto known = [&](std::int64_t t) -> std::optional<double> {
    auto it = scaleAt.find(t);
    return it == scaleAt.end() ? std::nullopt : std::optional<double>(it->second);
  };
  auto carried = [&](std::int64_t t) -> double {
    if (scaleAt.empty()) return 1.0;
    auto it = scaleAt.upper_bound(t);
    return it == scaleAt.begin() ? it->second : std::prev(it)->second;
  };
  std::set<std::int64_t> located;  // timeline points whose fall is pinned on a step
  for (auto& [k, m] : steps) {
    const auto before = known(2 * k - 1), after = known(2 * k + 1);
    const auto& fields = s.values.at(k);
    m.scale = static_cast<float>(before ? *before : carried(2 * k - 1));
    m.scaleAfter = static_cast<float>(after ? *after : m.scale);
    if (!fields.count(TbField::Skipped)) m.skipped = before && after && *after < *before;
    if (before && after) {
      located.insert(2 * k + 1);
      if (*after < *before) m.scaleEvent = "backoff";
      else if (*after > *before) m.scaleEvent = "growth";
    }
  }
  int unlocated = 0;
  for (auto it = scaleAt.begin(); it != scaleAt.end() && std::next(it) != scaleAt.end(); ++it) {
    const auto next = std::next(it);
    if (next->second < it->second && !located.count(next->first)) ++unlocated;
  }
  if (unlocated)
    out.warnings << QStringLiteral("the loss scale fell %1 times between values logged steps apart: those skipped steps cannot be "
                                   "located and are not marked (log the scale every step to see them)")
                        .arg(unlocated);

  // Time per step, when no tag gives it: wall time between two logged steps over the steps between.
  std::vector<StepMetrics> list;
  for (auto& [k, m] : steps) list.push_back(m);
  bool percent = false;
  for (std::size_t i = 0; i < list.size(); ++i) {
    StepMetrics& m = list[i];
    if (m.testAcc && *m.testAcc > 1) percent = true;
    if (m.stepMs != 0 || i == 0) continue;
    auto a = s.wallTime.find(list[i - 1].step), b = s.wallTime.find(m.step);
    if (a == s.wallTime.end() || b == s.wallTime.end()) continue;
    const double dt = b->second - a->second, ds = double(m.step - list[i - 1].step);
    if (dt > 0 && ds > 0) {
      m.stepMs = dt / ds * 1e3;
      out.stepTime = true;
    }
  }
  if (percent) {
    for (StepMetrics& m : list)
      if (m.testAcc) *m.testAcc /= 100;
    out.warnings << QStringLiteral("test accuracy was logged in percent: shown as a fraction");
  }
  out.steps = std::move(list);
  return out;
}

}  // namespace amp
