// The fp8 lessons' conclusions (issue 39; presets in engine/config/presets_fp8.cpp): each
// decides its claim from the fp8 records its runs made (StepMetrics::fp8: per quantised tensor
// and step, the amax, the scale used, the shares flushed to zero and clipped, the SQNR, and on
// histogram steps the exponents after the scale), and says the figures that decided it.
#include <QCoreApplication>
#include <algorithm>
#include <cmath>

#include "app/gui_lesson_conclusion.h"
#include "app/gui_lesson_conclusion_parts.h"
#include "engine/config/presets.h"
#include "ui/charts/fp8_series.h"
#include "ui/run_data.h"

namespace amp::gui {

namespace {

using namespace conclusion;

QString lossText(const ui::RunData& r) {
  QString t = r.series.loss.isEmpty() ? tr("no steps") : tr("loss %1").arg(number(finalLoss(r)));
  if (!r.series.testAcc.isEmpty()) t += tr(", accuracy %1").arg(percent(r.series.testAcc.last()));
  return t;
}

const Fp8TensorRecord* recordAt(const ui::RunData& r, std::int64_t step, const std::string& tensor) {
  for (const StepMetrics& m : r.steps)
    if (m.step == step) {
      for (const Fp8TensorRecord& x : m.fp8)
        if (x.tensor == tensor) return &x;
      return nullptr;
    }
  return nullptr;
}

// The output gradients (dy) of a run over every step: the mean share flushed to zero (over
// records with a non-zero value: a dy that nothing reached has none to lose) and mean SQNR.
struct GradientFigures {
  double underflow = std::nan(""), sqnrDb = std::nan("");
  int allZero = 0, records = 0;
};
GradientFigures gradientFigures(const ui::RunData& r, const QString& onlyTensor = {}) {
  GradientFigures g;
  double u = 0, q = 0;
  int n = 0, nq = 0;
  for (const StepMetrics& m : r.steps)
    for (const Fp8TensorRecord& x : m.fp8) {
      const QString t = QString::fromStdString(x.tensor);
      if (!t.endsWith(QLatin1String(".dy")) || (!onlyTensor.isEmpty() && t != onlyTensor)) continue;
      ++g.records;
      if (x.amax == 0) {
        ++g.allZero;
        continue;
      }
      u += x.underflow;
      ++n;
      if (std::isfinite(x.sqnrDb)) q += x.sqnrDb, ++nq;
    }
  if (n > 0) g.underflow = u / n;
  if (nq > 0) g.sqnrDb = q / nq;
  return g;
}

// The share of a tensor's non-zero values that sat below the format's normal range after the
// scale, from its scaled exponents (histogram steps only); NaN without them.
double belowNormalShare(const Fp8TensorRecord& x) {
  const auto range = ui::fp8FormatRange(QString::fromStdString(x.format));
  if (!range || x.scaledExponents.empty()) return std::nan("");
  std::int64_t below = 0, all = 0;
  for (const auto& [e, n] : x.scaledExponents) {
    all += n;
    if (e < range->minNormalExp) below += n;
  }
  return all > 0 ? double(below) / double(all) : std::nan("");
}

// 1. fp8 needs a scale.
void needsAScale(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  out.claim = tr("Gradients this small are below fp8's range: stored as they are (scale 1) they flush to "
                 "zero and the quantised layers stop learning, while a per-tensor scale moves them into "
                 "E5M2's range and the run learns as bf16 does.");
  out.chart = QStringLiteral("fp8-heat");
  const ui::RunData* bf16 = variant(runs, QStringLiteral("bf16"));
  const ui::RunData* unscaled = variant(runs, QStringLiteral("fp8_unscaled"));
  const ui::RunData* current = variant(runs, QStringLiteral("fp8_current"));
  // The output layer's gradient: the first the loss reaches (the last dy in model order).
  QString head;
  for (const ui::RunData* r : {unscaled, current})
    if (r && head.isEmpty())
      for (const QString& t : ui::fp8TensorsInModelOrder(*r))
        if (t.endsWith(QLatin1String(".dy"))) head = t;
  for (const ui::RunData* r : runs) {
    if (r->config.mode != PrecisionMode::Fp8) {
      addFinding(out, *r, tr("no quantisation; %1").arg(lossText(*r)));
      continue;
    }
    const GradientFigures h = gradientFigures(*r, head), all = gradientFigures(*r);
    QString text = tr("%1 of %2's non-zero values flushed to zero").arg(percent(h.underflow), head);
    if (all.allZero > 0)
      text += tr(", %1 of %2 gradient records all zero (nothing reached them)").arg(all.allZero).arg(all.records);
    addFinding(out, *r, text + QStringLiteral("; ") + lossText(*r));
  }
  if (!bf16 || !unscaled || !current)
    return missingRuns(out, {QStringLiteral("bf16"), QStringLiteral("fp8_unscaled"), QStringLiteral("fp8_current")});
  const double zu = gradientFigures(*unscaled, head).underflow, zc = gradientFigures(*current, head).underflow;
  const double lb = finalLoss(*bf16), lu = finalLoss(*unscaled), lc = finalLoss(*current);
  out.verdict = verdictOf(zu >= 0.5 && zc <= 0.05 && lc <= 0.5 * lu && lc <= 1.5 * lb);
  out.criterion = tr("unscaled, %1 of %2 flushed (half or more expected) and the loss stayed at %3; scaled, %4 "
                     "(5% or less) and a loss of %5, under half the unscaled one and within 1.5x of bf16's %6")
                      .arg(percent(zu), head, number(lu), percent(zc), number(lc), number(lb));
}

// 2. One outlier ruins a per-tensor scale.
void outlier(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  out.claim = tr("One outlier sets a per-tensor scale for the whole tensor: the other values land below "
                 "E4M3's normal range and many flush to zero, while MXFP8's block scales confine the "
                 "damage to the outlier's block of 32.");
  // The block scales over 2.x's shape: the outlier's block alone has the large amax and the large
  // scale, every other block keeps its own (the per-tensor run's flushed values: the heat map's tab).
  out.chart = QStringLiteral("fp8-blocks");
  const ui::RunData* perTensor = variant(runs, QStringLiteral("per_tensor"));
  const ui::RunData* mx = variant(runs, QStringLiteral("mxfp8"));
  const ui::Fp8Spike spike = ui::fp8Spike((perTensor ? perTensor : runs.first())->config.fp8);
  const std::string tensor = spike.tensor.toStdString();
  struct At {
    double underflow = std::nan(""), below = std::nan(""), before = std::nan("");
  };
  auto at = [&](const ui::RunData& r) {
    At a;
    if (const Fp8TensorRecord* x = recordAt(r, spike.step, tensor)) {
      a.underflow = x->underflow;
      a.below = belowNormalShare(*x);
    }
    if (const Fp8TensorRecord* x = recordAt(r, spike.step - 1, tensor)) a.before = x->underflow;
    return a;
  };
  for (const ui::RunData* r : runs) {
    const At a = at(*r);
    addFinding(out, *r,
               tr("at step %1 (the outlier, %2x the amax, in %3): %4 of %3's non-zero values flushed to zero "
                  "(%5 the step before), %6 below E4M3's normal range after the scale; %7")
                   .arg(spike.step)
                   .arg(spike.factor, 0, 'g', 3)
                   .arg(spike.tensor, percent(a.underflow), percent(a.before), percent(a.below), lossText(*r)));
  }
  if (!perTensor || !mx) return missingRuns(out, {QStringLiteral("per_tensor"), QStringLiteral("mxfp8")});
  const At p = at(*perTensor), m = at(*mx);
  out.verdict = verdictOf(p.underflow >= 0.1 && p.below >= 0.9 && m.underflow <= 0.01 && m.below <= 0.1);
  out.criterion = tr("per-tensor: %1 flushed (10% or more expected) and %2 below the normal range (90% or more); "
                     "MXFP8: %3 flushed (1% or less) and %4 below it (10% or less)")
                      .arg(percent(p.underflow), percent(p.below), percent(m.underflow), percent(m.below));
}

// 3. Delayed scaling lags a spike.
void delayedLag(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  out.claim = tr("Delayed scaling makes each scale from earlier steps' amax: a spike clips at its own step, "
                 "then keeps the scale too small while it stays in the amax history (amax_compute=max), "
                 "flushing small values for as many steps as the window is long; most_recent recovers "
                 "after one step.");
  out.chart = QStringLiteral("fp8-scale");
  const ui::RunData* maxRun = variant(runs, QStringLiteral("history_max"));
  const ui::RunData* recent = variant(runs, QStringLiteral("most_recent"));
  const ui::Fp8Spike spike = ui::fp8Spike((maxRun ? maxRun : runs.first())->config.fp8);
  struct Lag {
    bool clipped = false;
    QList<qint64> clippedSteps;
    int lagSteps = 0;  // steps after the spike whose scale was under a tenth of the one before it
    double scaleBefore = std::nan(""), scaleLow = std::nan("");
    double underflowBefore = std::nan(""), underflowLag = std::nan("");
    double whatIfLag = std::nan("");  // fp8.what_if's share flushed over the same steps
  };
  auto lag = [&](const ui::RunData& r) {
    Lag l;
    const ui::Fp8TensorSeries s = ui::fp8Series(r, spike.tensor);
    const int i0 = s.indexOfStep(double(spike.step));
    if (i0 <= 0) return l;
    for (int i = 0; i < s.size(); ++i)
      if (s.overflow[i] > 0) l.clippedSteps << qint64(s.step[i]);
    l.clipped = l.clippedSteps.contains(spike.step);
    l.scaleBefore = s.scale[i0 - 1];
    double u = 0, ub = 0;
    int nb = 0;
    for (int i = std::max(0, i0 - 10); i < i0; ++i) ub += s.underflow[i], ++nb;
    l.underflowBefore = nb ? ub / nb : 0;
    l.scaleLow = l.scaleBefore;
    double w = 0;
    for (int i = i0 + 1; i < s.size() && s.scale[i] < 0.1 * l.scaleBefore; ++i) {
      ++l.lagSteps;
      u += s.underflow[i];
      w += s.whatIfUnderflow[i];
      l.scaleLow = std::min(l.scaleLow, s.scale[i]);
    }
    if (s.hasWhatIf && l.lagSteps > 0) l.whatIfLag = w / l.lagSteps;
    l.underflowLag = l.lagSteps ? u / l.lagSteps : 0;
    return l;
  };
  for (const ui::RunData* r : runs) {
    const Lag l = lag(*r);
    QStringList clipped;
    for (qint64 s : l.clippedSteps) clipped << QString::number(s);
    addFinding(out, *r,
               tr("%1 clipped at step %2; then %3 at scale %4 (was %5), flushing %6 of its values "
                  "(%7 before the spike)")
                   .arg(spike.tensor, clipped.isEmpty() ? tr("nothing") : clipped.join(QStringLiteral(", ")),
                        l.lagSteps == 1 ? tr("1 step") : tr("%1 steps").arg(l.lagSteps))
                   .arg(number(l.scaleLow), number(l.scaleBefore), percent(l.underflowLag), percent(l.underflowBefore)) +
                   (std::isfinite(l.whatIfLag)
                        ? tr("; what if %1: %2 flushed over those steps")
                              .arg(QString::fromStdString(r->config.fp8.whatIf), percent(l.whatIfLag))
                        : QString()));
  }
  if (!maxRun || !recent) return missingRuns(out, {QStringLiteral("history_max"), QStringLiteral("most_recent")});
  const Lag a = lag(*maxRun), b = lag(*recent);
  const qint64 window = maxRun->config.fp8.historyLen;
  out.verdict = verdictOf(a.clipped && b.clipped && a.lagSteps >= window - 1 && b.lagSteps <= 2 &&
                          a.underflowLag > std::max(2 * a.underflowBefore, 0.001));
  out.criterion = tr("both clipped the spike at step %1 (%2, %3); the scale stayed under a tenth of its value for %4 "
                     "steps with max over %5 steps (%6 or more expected) and %7 with most_recent (2 or fewer); "
                     "max's lag flushed %8 of the values against %9 before")
                      .arg(spike.step)
                      .arg(a.clipped ? tr("yes") : tr("no"), b.clipped ? tr("yes") : tr("no"))
                      .arg(a.lagSteps)
                      .arg(window)
                      .arg(window - 1)
                      .arg(b.lagSteps)
                      .arg(percent(a.underflowLag), percent(a.underflowBefore));
}

// 4. Gradients need E5M2's range.
void gradientsNeedE5m2(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  out.claim = tr("With one scale per tensor, E4M3 gradients flush more values to zero than E5M2's (hybrid); "
                 "block scales (MXFP8) make E4M3 enough: fewer lost than hybrid, at E4M3's precision.");
  out.chart = QStringLiteral("fp8-heat");
  for (const ui::RunData* r : runs) {
    const GradientFigures g = gradientFigures(*r);
    addFinding(out, *r, tr("gradients (dy): %1 flushed to zero on average, SQNR %2 dB; %3")
                            .arg(percent(g.underflow), number(g.sqnrDb), lossText(*r)));
  }
  const ui::RunData* hybrid = variant(runs, QStringLiteral("hybrid"));
  const ui::RunData* e4m3 = variant(runs, QStringLiteral("e4m3"));
  const ui::RunData* mx = variant(runs, QStringLiteral("e4m3_mxfp8"));
  if (!hybrid || !e4m3 || !mx)
    return missingRuns(out, {QStringLiteral("hybrid"), QStringLiteral("e4m3"), QStringLiteral("e4m3_mxfp8")});
  const GradientFigures h = gradientFigures(*hybrid), e = gradientFigures(*e4m3), m = gradientFigures(*mx);
  out.verdict = verdictOf(e.underflow >= 1.5 * h.underflow && e.underflow > 0 && m.underflow <= h.underflow &&
                          m.sqnrDb > h.sqnrDb);
  out.criterion = tr("per-tensor E4M3 flushed %1 of the gradients' values against hybrid's %2 (1.5x or more "
                     "expected); MXFP8 E4M3 %3 (no more than hybrid) at %4 dB against hybrid's %5 dB (higher)")
                      .arg(percent(e.underflow), percent(h.underflow), percent(m.underflow), number(m.sqnrDb),
                           number(h.sqnrDb));
}

// 6. The accumulator (a model).
void accumulator(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  out.claim = tr("In the accumulation MODEL, a long reduction into a 6-bit accumulator loses its small "
                 "products and the run learns little; promoting the partial sums into fp32 every 128 "
                 "products restores most of what was lost.");
  out.chart = QStringLiteral("loss");
  const ui::RunData* exact = variant(runs, QStringLiteral("exact_fp32"));
  const ui::RunData* none = variant(runs, QStringLiteral("acc6_no_promotion"));
  const ui::RunData* promo = variant(runs, QStringLiteral("acc6_promote128"));
  for (const ui::RunData* r : runs) {
    const Fp8Config& c = r->config.fp8;
    const QString how = c.accumBits <= 0 ? tr("exact fp32 accumulation")
                        : c.accumPromote >= 100000
                            ? tr("%1-bit accumulator (model), never promoted").arg(c.accumBits)
                            : tr("%1-bit accumulator (model), promoted every %2").arg(c.accumBits).arg(c.accumPromote);
    addFinding(out, *r, tr("%1: %2").arg(how, lossText(*r)));
  }
  if (!exact || !none || !promo)
    return missingRuns(out, {QStringLiteral("exact_fp32"), QStringLiteral("acc6_no_promotion"),
                             QStringLiteral("acc6_promote128")});
  const double le = finalLoss(*exact), ln = finalLoss(*none), lp = finalLoss(*promo);
  const double gn = ln - le, gp = lp - le;
  out.verdict = verdictOf(std::isfinite(gn) && std::isfinite(gp) && ln >= 1.5 * le && gp <= gn / 3);
  out.criterion = tr("never promoted, the loss ended at %1 against exact accumulation's %2 (1.5x or more "
                     "expected); promoted every 128 products, at %3: %4 of the gap left (a third or less expected)")
                      .arg(number(ln), number(le), number(lp), percent(gn > 0 ? gp / gn : std::nan("")));
  out.note = tr("The accumulator is a model (fp8.accum_bits): partial sums truncated to N mantissa bits on the "
                "CPU, not a measurement of any GPU.");
}

}  // namespace

bool fp8LessonResult(const Preset& p, const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  if (p.name == "fp8-needs-a-scale")
    needsAScale(runs, out);
  else if (p.name == "fp8-outlier")
    outlier(runs, out);
  else if (p.name == "fp8-delayed-lag")
    delayedLag(runs, out);
  else if (p.name == "fp8-gradients-e5m2")
    gradientsNeedE5m2(runs, out);
  else if (p.name == "fp4")
    fourBitsResult(runs, out);
  else if (p.name == "fp8-accumulator")
    accumulator(runs, out);
  else
    return false;
  return true;
}

}  // namespace amp::gui
