#include "app/gui_lesson_conclusion.h"
#include "app/gui_lesson_conclusion_parts.h"
#include "app/gui_lesson_speed.h"

#include <QCoreApplication>
#include <algorithm>
#include <cmath>

#include "engine/config/presets.h"
#include "engine/core/memory_tracker.h"
#include "engine/train/event_text.h"
#include "engine/train/run_summary.h"
#include "engine/train/speed_turns.h"
#include "ui/run_data.h"

namespace amp::gui {

namespace {

using namespace conclusion;

QString lossText(const ui::RunData& r) { return r.series.loss.isEmpty() ? tr("no steps") : number(finalLoss(r)); }

double meanOf(const QVector<double>& v) {
  if (v.isEmpty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / v.size();
}

// The tensor as a run's line names it: "0.weight"; a long path by its last two parts
// ("c_attn.weight" for transformer.h.0.attn.c_attn.weight), so each run's line stays one line
// on a projector.
QString tensorName(const QString& key) {
  const QString name = key.section(QLatin1Char('|'), 1);
  return name.size() <= 16 ? name : name.section(QLatin1Char('.'), -2);
}

const ui::RunData* fp32Run(const QVector<const ui::RunData*>& runs) {
  for (const ui::RunData* r : runs)
    if (r->config.mode == PrecisionMode::Fp32) return r;
  return nullptr;
}

bool closeTo(double value, double reference, double relative) {
  return std::isfinite(value) && std::isfinite(reference) &&
         std::abs(value - reference) <= relative * std::abs(reference) + 1e-3;
}

void underflowResult(const Preset& p, const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  const QString key = QString::fromStdString(p.focus);
  const bool bf16Lesson = p.name == "bf16-no-scaler";
  out.claim = bf16Lesson
                  ? tr("bf16 has fp32's exponent range: gradients that round to zero in fp16 survive in bf16 "
                       "with no loss scaler at all.")
                  : p.name == "gpt-scaling"
                        ? tr("A language model's gradients, made this small, round to zero in fp16: without "
                             "loss scaling it never learns, while dynamic loss scaling keeps them and trains "
                             "as fp32 (and bf16, with no scaler) does.")
                        : tr("Gradients this small round to zero in fp16: without loss scaling the run stops "
                             "learning, while dynamic loss scaling keeps them and trains as fp32 does.");
  out.chart = QStringLiteral("histogram");
  for (const ui::RunData* r : runs) {
    const double z = zeroFraction(*r, key);
    addFinding(out, *r,
               tr("%1 of %2's gradients zero, final loss %3")
                   .arg(z >= 0 ? percent(z) : tr("(no histograms)"), tensorName(key), lossText(*r)));
  }
  const ui::RunData* noscale = variant(runs, QStringLiteral("fp16_noscale"));
  if (bf16Lesson) {
    const ui::RunData* bf16 = variant(runs, QStringLiteral("bf16_noscale"));
    if (!noscale || !bf16) return missingRuns(out, {QStringLiteral("fp16_noscale"), QStringLiteral("bf16_noscale")});
    const double zf = zeroFraction(*noscale, key), zb = zeroFraction(*bf16, key);
    const double lf = finalLoss(*noscale), lb = finalLoss(*bf16);
    out.verdict = verdictOf(zf >= 0.5 && zb >= 0 && zb <= 0.05 && lb < lf);
    out.criterion = tr("fp16 lost %1 of the gradients (50% or more expected), bf16 %2 (5% or less), and "
                       "bf16's loss %3 ended below fp16's %4")
                        .arg(percent(std::max(zf, 0.0)), percent(std::max(zb, 0.0)), number(lb), number(lf));
    return;
  }
  const ui::RunData* dynamic = variant(runs, QStringLiteral("fp16_dynamic"));
  const ui::RunData* fp32 = variant(runs, QStringLiteral("fp32"));
  if (!noscale || !dynamic || !fp32)
    return missingRuns(out, {QStringLiteral("fp32"), QStringLiteral("fp16_noscale"), QStringLiteral("fp16_dynamic")});
  const double zn = zeroFraction(*noscale, key), zd = zeroFraction(*dynamic, key);
  const double l32 = finalLoss(*fp32), ln = finalLoss(*noscale), ld = finalLoss(*dynamic);
  out.verdict = verdictOf(zn >= 0.5 && zd >= 0 && zd <= 0.05 && closeTo(ld, l32, 0.1) && ln > 1.1 * l32);
  // Short enough for a projector: each figure beside what was expected of it.
  out.criterion = tr("unscaled, %1 of the gradients zero (50% or more expected) and a loss of %2 against fp32's "
                     "%3; with dynamic scaling %4 zero (5% or less) and a loss of %5, within 10% of fp32's")
                      .arg(percent(std::max(zn, 0.0)), number(ln), number(l32), percent(std::max(zd, 0.0)), number(ld));
}

void overflowResult(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  out.claim = tr("When a gradient overflows, the dynamic scaler skips that step and halves the scale, "
                 "then doubles it again after growth_interval clean steps.");
  out.chart = QStringLiteral("scale");
  bool all = true;
  QStringList decided;
  for (const ui::RunData* r : runs) {
    QStringList steps;
    for (double s : r->series.skippedStep) steps << QString::number(qint64(s));
    const auto& scale = r->series.scale;
    const double low = scale.isEmpty() ? 0 : *std::min_element(scale.begin(), scale.end());
    const double last = scale.isEmpty() ? 0 : scale.last();
    addFinding(out, *r,
               tr("%1 steps skipped (%2), scale down to %3 and back to %4")
                   .arg(steps.size())
                   .arg(steps.isEmpty() ? tr("none") : steps.join(QStringLiteral(", ")),
                        QString::fromStdString(formatScale(low)), QString::fromStdString(formatScale(last))));
    // Every injected step the run reached must have been skipped, and the scale must have grown
    // back above its lowest point once the overflows stopped.
    QStringList injected, missed;
    for (std::int64_t s : r->config.train.injectNonFinite)
      if (s <= r->series.size()) {
        injected << QString::number(s);
        if (!r->series.skippedStep.contains(double(s))) missed << QString::number(s);
      }
    // Grown back: the scale rose again after the first skip (it doubles after growth_interval
    // clean steps; a run that ends sooner than that after its last skip has still shown it).
    bool grewBack = false;
    const double firstSkip = r->series.skippedStep.isEmpty() ? -1 : r->series.skippedStep.first();
    for (int i = 1; i < scale.size() && firstSkip >= 0; ++i)
      if (r->series.step[i] > firstSkip && scale[i] > scale[i - 1]) grewBack = true;
    all = all && !injected.isEmpty() && missed.isEmpty() && grewBack;
    decided << tr("%1 of %2 injected overflows skipped, and the scale %3")
                   .arg(injected.size() - missed.size())
                   .arg(injected.size())
                   .arg(grewBack ? tr("grew again after clean steps") : tr("never grew again"));
  }
  out.verdict = runs.isEmpty() ? Verdict::Inconclusive : verdictOf(all);
  out.criterion = decided.join(QStringLiteral("; "));
}

// Two ranks, an overflow on one of them: the same skipped steps and scales as one process.
void twoWorkersResult(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  out.claim = tr("With the gradients averaged over the ranks before unscaling, an overflow on one rank "
                 "makes every rank skip: the 2-rank run skips the same steps and moves its scale "
                 "exactly as the single process does.");
  out.chart = QStringLiteral("scale");
  const ui::RunData* one = variant(runs, QStringLiteral("1_rank"));
  const ui::RunData* two = variant(runs, QStringLiteral("2_ranks"));
  if (!one || !two) return missingRuns(out, {QStringLiteral("1_rank"), QStringLiteral("2_ranks")});
  auto skipped = [](const ui::RunData& r) {
    QStringList s;
    for (double x : r.series.skippedStep) s << QString::number(qint64(x));
    return s;
  };
  const QStringList s1 = skipped(*one), s2 = skipped(*two);
  const qsizetype n = std::min(one->series.scale.size(), two->series.scale.size());
  bool sameScales = n > 0;
  for (qsizetype i = 0; i < n; ++i) sameScales = sameScales && one->series.scale[i] == two->series.scale[i];
  addFinding(out, *one, tr("skipped %1").arg(s1.isEmpty() ? tr("nothing") : s1.join(QStringLiteral(", "))));
  addFinding(out, *two, tr("skipped %1 (the overflows were injected on rank 1 only)")
                            .arg(s2.isEmpty() ? tr("nothing") : s2.join(QStringLiteral(", "))));
  out.verdict = verdictOf(!s2.isEmpty() && s1 == s2 && sameScales);
  out.criterion = tr("the same skipped steps (%1 against %2) and the same loss scale at each of %3 steps: %4")
                      .arg(s2.join(QStringLiteral(", ")), s1.join(QStringLiteral(", ")))
                      .arg(n)
                      .arg(sameScales ? tr("yes") : tr("no"));
}

void lostUpdatesResult(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  out.claim = tr("Without fp32 master weights, updates smaller than half an fp16 spacing are rounded "
                 "away: pure fp16 loses them and learns slower, AMP keeps every one.");
  out.chart = QStringLiteral("updates");  // the lost-update meter, step by step
  for (const ui::RunData* r : runs) {
    const auto& loss = r->series.loss;
    addFinding(out, *r,
               tr("lost %1 of its updates, loss %2 → %3")
                   .arg(percent(meanOf(r->series.lostUpdateFrac)),
                        loss.isEmpty() ? QString() : number(loss.first()), lossText(*r)));
  }
  const ui::RunData* pure = variant(runs, QStringLiteral("pure_fp16"));
  const ui::RunData* amp = variant(runs, QStringLiteral("amp_fp16"));
  if (!pure || !amp) return missingRuns(out, {QStringLiteral("pure_fp16"), QStringLiteral("amp_fp16")});
  const double lp = meanOf(pure->series.lostUpdateFrac), la = meanOf(amp->series.lostUpdateFrac);
  const double fp = finalLoss(*pure), fa = finalLoss(*amp);
  out.verdict = verdictOf(lp >= 0.05 && la <= lp / 10 && fa < fp);
  out.criterion = tr("pure fp16 lost %1 of its updates (5% or more expected), AMP %2 (a tenth of that or "
                     "less), and AMP's loss %3 ended below pure fp16's %4")
                      .arg(percent(lp), percent(la), number(fa), number(fp));
}

// Whether a run's 16-bit GEMMs are emulated here (fp32 math on 16-bit values), from how it
// reported its compute path: its speed and memory then say nothing of AMP on a GPU.
bool emulated(const ui::RunData& r) {
  return r.config.mode != PrecisionMode::Fp32 && r.computePath.contains(QLatin1String("emulated"));
}

// Which runs compute in 16 bits by emulation here ("fp16, bf16"), from how each run reported it.
QStringList emulatedModes(const QVector<const ui::RunData*>& runs) {
  QStringList out;
  for (const ui::RunData* r : runs)
    if (emulated(*r)) out << QString::fromLatin1(std::string(dtypeName(r->config.computeDtype())).c_str());
  out.removeDuplicates();
  return out;
}

// The run's first loss (NaN before its first step).
double firstLoss(const ui::RunData& r) { return r.series.loss.isEmpty() ? std::nan("") : r.series.loss.first(); }

// Whether the run learned anything: its loss (the runs table's final figure) fell by 5% or more
// from its first step. On random data (the recipe's) it does not, and losses that agree then
// test nothing: every run sits at the same untrained value.
bool lossFell(const ui::RunData& r) {
  const double first = firstLoss(r), last = finalLoss(r);
  return std::isfinite(first) && std::isfinite(last) && last <= 0.95 * first;
}


double memoryRatio(const ui::RunData& r, const ui::RunData* fp32) {
  if (!fp32 || &r == fp32) return 0;
  const double base = double(fp32->summary.summary().peakMemory.totalPeak);
  const double own = double(r.summary.summary().peakMemory.totalPeak);
  return base > 0 && own > 0 ? own / base : 0;
}

QString ratioText(double q) { return QStringLiteral("%1x").arg(q, 0, 'f', 2); }

// What the class should know of the emulated runs' speed and memory, following what they
// measured (each run's line has the figures): slower only where they were slower, heavier only
// where they were heavier, and that neither says anything of a GPU's. Empty where no run is
// emulated. (A fixed "so here it is slower than fp32" sat under "3.21x fp32's speed", and in
// the spirals, which has no fp32 run.)
QString emulationNote(const QVector<const ui::RunData*>& runs, const ui::RunData* fp32, int turnBlockSteps) {
  const QStringList modes = emulatedModes(runs);
  if (modes.isEmpty()) return {};
  // By run: "fp16 slower than fp32" where bf16 kept fp32's pace says only what was measured.
  QStringList slower, heavier;
  for (const ui::RunData* r : runs) {
    if (!emulated(*r)) continue;
    // Slower only where the rounds agree on it (runs in turns) or the medians say so.
    const SpeedFigure q = speedAgainst(*r, fp32, turnBlockSteps);
    const double m = memoryRatio(*r, fp32);
    if (q.ratio > 0 && q.ratio < 0.95 && !q.noisy) slower << variantLabel(*r);
    if (m > 1.02) heavier << variantLabel(*r);
  }
  // Short: at 1024x640 x1.5 every line of the result must be on screen.
  QStringList measured;
  if (!slower.isEmpty() && slower == heavier) {
    measured << tr("%1 ran slower and took more memory than fp32 (the 16-bit weight copies)").arg(slower.join(tr(" and ")));
  } else {
    if (!slower.isEmpty()) measured << tr("%1 ran slower than fp32").arg(slower.join(tr(" and ")));
    if (!heavier.isEmpty()) measured << tr("%1 took more memory (the 16-bit weight copies)").arg(heavier.join(tr(" and ")));
  }
  const QString emulation = (modes.size() == 1 ? tr("%1 is emulated in fp32 on this CPU (no native kernels)")
                                               : tr("%1 are emulated in fp32 on this CPU (no native kernels)"))
                                .arg(modes.join(tr(" and ")));
  return measured.isEmpty()
             ? tr("%1: its speed and memory here say nothing of a GPU's.").arg(emulation)
             : tr("%1: here %2, which says nothing of a GPU.").arg(emulation, measured.join(tr(", and ")));
}

// fp32 vs fp16 vs bf16: final loss (and accuracy), the median step time and the peak memory
// against fp32's, the figures the runs table shows (its summary: warm-up steps left out).
// The recipe lessons are about speed: there the verdict is the AMP runs' step time against
// fp32's, where their 16-bit GEMMs run natively; elsewhere it is the result (accuracy or loss)
// against fp32's, where fp32 learned something to compare against.
void modesResult(const Preset& p, const QVector<const ui::RunData*>& runs, int turnBlockSteps, ui::LessonResult& out) {
  const ui::RunData* fp32 = fp32Run(runs);
  const bool speedLesson = p.name == "recipe" || p.name == "tensor-cores";
  const bool accuracy = std::all_of(runs.begin(), runs.end(), [](const ui::RunData* r) { return !r->series.testAcc.isEmpty(); });
  out.claim = speedLesson ? tr("Where its 16-bit matrix multiplies run natively (tensor cores, AMX), AMP takes less "
                               "time per step than fp32 and follows fp32's loss.")
              : runs.size() > 1 ? tr("AMP (fp16 with loss scaling, and bf16) trains to the same result as fp32.")
                                : tr("This model trains to a good result under AMP.");
  out.chart = speedLesson ? QStringLiteral("throughput") : accuracy ? QStringLiteral("accuracy") : QStringLiteral("loss");
  // 2-D data: the points and the boundary the model learned say it best (TF Playground's view).
  if (!speedLesson && !runs.isEmpty() &&
      std::all_of(runs.begin(), runs.end(), [](const ui::RunData* r) { return r->decisionMap != nullptr; }))
    out.chart = QStringLiteral("data");
  for (const ui::RunData* r : runs) {
    const RunSummary s = r->summary.summary();
    QString part = tr("reached loss %1").arg(lossText(*r));
    if (!r->series.testAcc.isEmpty()) part += tr(", accuracy %1").arg(percent(r->series.testAcc.last()));
    // Steps the loss scaler skipped (an overflow while it searched for its scale) are part of
    // what happened: a lesson that hid them argued a cleaner run than the class saw.
    if (!r->series.skippedStep.isEmpty()) {
      QStringList steps;
      for (double st : r->series.skippedStep) steps << QString::number(qint64(st));
      if (steps.size() > 5) steps = steps.mid(0, 5) << QStringLiteral("…");
      const qsizetype n = r->series.skippedStep.size();
      const QString which = steps.join(QStringLiteral(", "));
      part += n == 1 ? tr(", 1 step skipped by the loss scaler (%1)").arg(which)
                     : tr(", %1 steps skipped by the loss scaler (%2)").arg(n).arg(which);
    }
    part += tr(", %1 ms/step").arg(s.medianStepMs, 0, 'f', 2);
    if (const SpeedFigure q = speedAgainst(*r, fp32, turnBlockSteps); q.ratio > 0)
      part += tr(" (%1%2)").arg(speedText(q), q.noisy ? tr(": too noisy to tell") : QString());
    part += tr(", peak memory %1").arg(QString::fromStdString(formatBytes(s.peakMemory.totalPeak)));
    if (const double m = memoryRatio(*r, fp32); m > 0) part += tr(" (%1 fp32's)").arg(ratioText(m));
    addFinding(out, *r, part);
  }
  out.note = emulationNote(runs, fp32, turnBlockSteps);
  if (speedLesson && !emulatedModes(runs).isEmpty()) {
    // The criterion says the emulated runs' speed is not AMP's: the note says what a GPU measured.
    out.note = tr("On an NVIDIA H200 (this recipe at 4096/512): fp32 3.32 ms/step, AMP fp16 1.82, AMP bf16 1.13.");
    if (std::any_of(runs.begin(), runs.end(), [&](const ui::RunData* r) { return emulated(*r) && memoryRatio(*r, fp32) > 1.02; }))
      out.note += tr(" Here the emulated runs' 16-bit weight copies outweigh their halved activations.");
  }

  if (runs.size() == 1) {  // a single run (the spirals): did it learn?
    const ui::RunData& r = *runs.first();
    if (accuracy) {
      const double acc = r.series.testAcc.last();
      // Chance is 50% on two classes; the lesson's MLP reached 87-89% of its spirals' test points
      // at noise 0.1 (1000 to 2000 steps, fp32 and AMP alike: 90% failed a run that had
      // learned), 99.5% at the lesson's 0.05 now. 85% stands for either.
      out.verdict = verdictOf(acc >= 0.85);
      out.criterion = tr("test accuracy %1 (85% or more expected; chance is 50%)").arg(percent(acc));
    } else {
      const double first = firstLoss(r), last = finalLoss(r);
      out.verdict = verdictOf(last < 0.5 * first);
      out.criterion = tr("the loss fell from %1 to %2 (to half or less expected)").arg(number(first), number(last));
    }
    return;
  }
  if (!fp32) return missingRuns(out, {QStringLiteral("fp32")});
  const bool failed = std::any_of(runs.begin(), runs.end(), [](const ui::RunData* r) {
    return r->status == ui::RunStatus::Diverged || r->status == ui::RunStatus::Failed;
  });
  // The results against fp32's: meaningful only where fp32 learned.
  const bool learned = lossFell(*fp32);
  bool resultsAgree = true;
  QStringList results;
  for (const ui::RunData* r : runs) {
    if (r == fp32) continue;
    if (accuracy) {
      const double a = r->series.testAcc.last(), a32 = fp32->series.testAcc.last();
      resultsAgree = resultsAgree && std::abs(a - a32) <= 0.02;
      results << tr("%1's accuracy %2 vs fp32's %3").arg(variantLabel(*r), percent(a), percent(a32));
    } else {
      resultsAgree = resultsAgree && closeTo(finalLoss(*r), finalLoss(*fp32), 0.05);
      results << tr("%1's loss %2 vs fp32's %3").arg(variantLabel(*r), lossText(*r), lossText(*fp32));
    }
  }
  resultsAgree = resultsAgree && !failed;
  const QString resultsText = results.join(QStringLiteral(", ")) +
                              (accuracy ? tr(" (within 2 points expected)") : tr(" (within 5% expected)"));
  const QString flat = tr("fp32's loss went from %1 to %2: nothing was learned, so losses that agree test nothing")
                           .arg(number(firstLoss(*fp32)), number(finalLoss(*fp32)));

  if (!speedLesson) {
    if (!learned && !failed) {
      out.verdict = Verdict::Inconclusive;
      out.notMeasurable = true;
      out.criterion = flat;
      return;
    }
    out.verdict = verdictOf(resultsAgree);
    out.criterion = resultsText;
    return;
  }
  // Speed: the AMP runs whose GEMMs are native here; an emulated run's step time measures the
  // emulation, not AMP.
  // Faster means 5% or more; runs that trained in turns must agree on it round by round.
  constexpr double kFaster = 1.05;
  QStringList speeds, notMeasured, noisy;
  bool faster = true;
  int measured = 0;
  for (const ui::RunData* r : runs) {
    if (r == fp32) continue;
    if (emulated(*r)) {
      notMeasured << variantLabel(*r);
      continue;
    }
    const SpeedFigure q = speedAgainst(*r, fp32, turnBlockSteps, kFaster);
    ++measured;
    faster = faster && q.ratio >= kFaster;
    if (q.noisy) noisy << variantLabel(*r);
    speeds << tr("%1 at %2").arg(variantLabel(*r), q.ratio > 0 ? speedText(q) : tr("(not measured) fp32's speed"));
  }
  QString criterion;
  if (!speeds.isEmpty()) criterion = speeds.join(QStringLiteral(", ")) + tr(" (faster than fp32 expected)");
  // How the step times were taken decides what they can show: in turns, a load that changed
  // fell on every run alike; one after another, it reads as a speed difference.
  if (measured > 0)
    criterion += turnBlockSteps > 0
                     ? tr("; timed in turns of %1 steps, compared round by round").arg(turnBlockSteps)
                     : tr("; timed one after another: a change of load between the runs reads as a speed difference");
  if (!notMeasured.isEmpty())
    criterion += (criterion.isEmpty() ? QString() : QStringLiteral("; ")) +
                 tr("%1 emulated here: step times of the emulation, not of AMP").arg(notMeasured.join(tr(" and ")));
  criterion += QStringLiteral("; ") + (learned ? resultsText : flat);
  out.criterion = criterion;
  if (measured == 0) {
    out.verdict = Verdict::Inconclusive;
    out.notMeasurable = true;
    return;
  }
  if (!noisy.isEmpty()) {
    // The rounds disagree (a load that came and went within blocks, or too few rounds): the
    // figures cannot say faster or not.
    out.verdict = Verdict::Inconclusive;
    out.criterion += tr("; too noisy to conclude for %1: the rounds' quartiles must lie on one side of %2x and "
                        "within %3x of each other, over %4 rounds or more")
                         .arg(noisy.join(tr(" and ")))
                         .arg(kFaster, 0, 'f', 2)
                         .arg(kMaxPairedSpread, 0, 'f', 1)
                         .arg(kMinPairedRounds);
    return;
  }
  out.verdict = verdictOf(faster && (!learned || resultsAgree) && !failed);
}

// The seeds' table in a sentence per run: test accuracy, time per epoch, activation memory,
// the checkpoint and the weights file, each against fp32's (the runs table's figures).
void resnetResult(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  out.claim = tr("AMP reaches fp32's accuracy while it keeps the activations in 16 bits (about half "
                 "the memory) and exports a weights file half the size.");
  // The training loss, step by step, with the evaluations as dots: the accuracy chart had two
  // points per run (one evaluation an epoch), a line that showed nothing (issue 42 item 7).
  out.chart = QStringLiteral("loss");
  const ui::RunData* fp32 = fp32Run(runs);
  const RunSummary base = fp32 ? fp32->summary.summary() : RunSummary{};
  auto ratio = [&](const ui::RunData* r, double value, double baseValue) {
    return r != fp32 && value > 0 && baseValue > 0 ? value / baseValue : 0.0;
  };
  auto against = [](double q) { return q > 0 ? tr(" (%1x)").arg(q, 0, 'f', 2) : QString(); };
  const int act = int(MemCategory::Activations);
  bool all = fp32 && !fp32->series.testAcc.isEmpty();
  QStringList decided;
  for (const ui::RunData* r : runs) {
    const RunSummary s = r->summary.summary();
    QString part = r->series.testAcc.isEmpty() ? tr("no test accuracy yet")
                                               : tr("accuracy %1").arg(percent(r->series.testAcc.last()));
    if (!s.epochSeconds.empty()) {
      const double e = median(s.epochSeconds), be = base.epochSeconds.empty() ? 0 : median(base.epochSeconds);
      part += tr(", %1 s/epoch%2").arg(e, 0, 'f', 1).arg(against(ratio(r, e, be)));
    }
    const double a = double(s.peakMemory.peak[act]), qa = ratio(r, a, double(base.peakMemory.peak[act]));
    part += tr(", activations %1%2").arg(QString::fromStdString(formatBytes(std::int64_t(a))), against(qa));
    if (r->checkpointBytes > 0)
      part += tr(", checkpoint %1%2")
                  .arg(QString::fromStdString(formatBytes(r->checkpointBytes)),
                       against(ratio(r, double(r->checkpointBytes), fp32 ? double(fp32->checkpointBytes) : 0)));
    const double qw = ratio(r, double(r->weightsBytes), fp32 ? double(fp32->weightsBytes) : 0);
    if (r->weightsBytes > 0)
      part += tr(", %1 weights %2%3").arg(r->weightsDtype, QString::fromStdString(formatBytes(r->weightsBytes)), against(qw));
    addFinding(out, *r, part);
    if (r == fp32 || !fp32 || fp32->series.testAcc.isEmpty()) continue;
    const bool accOk = !r->series.testAcc.isEmpty() &&
                       std::abs(r->series.testAcc.last() - fp32->series.testAcc.last()) <= 0.03;
    all = all && accOk && qa > 0 && qa <= 0.75 && (qw == 0 || qw <= 0.6);
    decided << tr("%1: accuracy %2 vs fp32's %3, activations %4x, weights %5")
                   .arg(variantLabel(*r),
                        r->series.testAcc.isEmpty() ? tr("none") : percent(r->series.testAcc.last()),
                        percent(fp32->series.testAcc.last()))
                   .arg(qa, 0, 'f', 2)
                   .arg(qw > 0 ? QStringLiteral("%1x").arg(qw, 0, 'f', 2) : tr("not exported"));
  }
  if (!fp32) return missingRuns(out, {QStringLiteral("fp32")});
  out.verdict = verdictOf(all);
  out.criterion = decided.join(QStringLiteral("; ")) +
                  tr(" (expected: within 3 points, activations 0.75x or less, weights 0.6x or less)");
  const QStringList emulatedDtypes = emulatedModes(runs);
  if (!emulatedDtypes.isEmpty())
    out.note = tr("This CPU emulates %1 exactly in fp32: the time per epoch says nothing of a GPU's.")
                   .arg(emulatedDtypes.join(tr(" and ")));
}

}  // namespace

QString variantLabel(const ui::RunData& run) {
  const QString name = QString::fromStdString(run.config.name);
  const int slash = name.lastIndexOf(QLatin1Char('/'));
  return slash >= 0 ? name.mid(slash + 1) : run.name;
}

double zeroFraction(const ui::RunData& run, const QString& tensorKey) {
  std::int64_t zero = 0, flushed = 0, total = 0;
  bool found = false;
  for (const ui::HistogramFrame& f : run.histograms)
    for (const HistogramRecord& r : f.records) {
      const QString key = QString::fromLatin1(histogramKindName(r.kind)) + QLatin1Char('|') +
                          QString::fromStdString(r.tensor);
      if (key != tensorKey) continue;
      found = true;
      zero += r.scaled.counts[kHistBinZero];
      flushed += std::max<std::int64_t>(0, r.flushedToZero);
      total += r.scaled.total;
    }
  if (!found || total == 0) return -1;
  return double(std::max(zero, flushed)) / double(total);
}

ui::LessonResult lessonResult(const Preset& p, const QVector<const ui::RunData*>& runs, int turnBlockSteps) {
  ui::LessonResult out;
  out.lesson = QString::fromStdString(p.name);
  out.title = QString::fromStdString(p.title);
  const bool anySteps = std::any_of(runs.begin(), runs.end(), [](const ui::RunData* r) { return r->series.size() > 0; });
  if (!anySteps) return out;
  if (p.name == "underflow" || p.name == "bf16-no-scaler" || p.name == "gpt-scaling")
    underflowResult(p, runs, out);
  else if (p.name == "overflow")
    overflowResult(runs, out);
  else if (p.name == "two-workers")
    twoWorkersResult(runs, out);
  else if (p.name == "pure-fp16")
    lostUpdatesResult(runs, out);
  else if (p.name == "resnet")
    resnetResult(runs, out);
  else if (p.name == "gpt-fp32-ops")
    fp32OpsResult(runs, out);
  else if (p.name == "gpt")
    languageModelResult(runs, out);
  else if (fp8LessonResult(p, runs, out))  // gui_lesson_conclusion_fp8.cpp (issue 39)
    ;
  else
    modesResult(p, runs, turnBlockSteps, out);
  // A language model's lesson ends with what it learnt to write (the first run that wrote).
  for (const ui::RunData* r : runs)
    if (!r->textSample.isEmpty()) {
      // 100 characters: a sentence or two of it, within two lines of the result on a projector.
      const QString sample = r->textSample.size() > 100 ? r->textSample.left(99) + QStringLiteral("…") : r->textSample;
      const QString wrote = tr("%1 wrote: “%2”").arg(variantLabel(*r), sample);
      out.note = out.note.isEmpty() ? wrote : out.note + QLatin1Char(' ') + wrote;
      break;
    }
  return out;
}

}  // namespace amp::gui
