// The fp4 lesson's conclusion (preset in engine/config/presets_fp8.cpp). Its verdict rests only
// on figures no seed can move: each nvfp4 run's operands' SQNR, and the weight-gradient operands
// quantised twice from the same values, without and with the random Hadamard transform
// (Fp8TensorRecord::hasWgradRht, histogram steps). The validation losses are reported against
// the gap between two bf16 seeds, never judged: over 40 steps of this small GPT the seed moves
// them more than the recipe does (README "Measured", 2026-12-02).
#include <QCoreApplication>
#include <QHash>
#include <algorithm>
#include <cmath>

#include "app/gui_lesson_conclusion.h"
#include "app/gui_lesson_conclusion_parts.h"
#include "ui/run_data.h"

namespace amp::gui {

namespace {

using namespace conclusion;

bool isGradient(const Fp8TensorRecord& x) { return x.tensor.ends_with(".dy"); }

// A run's quantisation figures, means over its records (SQNR over the finite ones).
struct Fp4Figures {
  double forwardSqnr = std::nan("");    // x and w as the forward GEMM received them
  double gradientSqnr = std::nan("");   // dy as the input-gradient GEMM received it
  double plainSqnr = std::nan(""), rhtSqnr = std::nan("");            // the weight-gradient copies
  double plainFlushed = std::nan(""), rhtFlushed = std::nan("");      // of x and dy, same values
  int sameTensorRecords = 0;
};

struct Mean {
  double sum = 0;
  int n = 0;
  void add(double v) {
    if (std::isfinite(v)) sum += v, ++n;
  }
  double value() const { return n ? sum / n : std::nan(""); }
};

Fp4Figures fp4Figures(const ui::RunData& r) {
  Mean fwd, grad, plain, rht, plainZ, rhtZ;
  Fp4Figures f;
  for (const StepMetrics& m : r.steps)
    for (const Fp8TensorRecord& x : m.fp8) {
      if (x.amax == 0) continue;  // nothing reached it: no figures to average
      (isGradient(x) ? grad : fwd).add(x.sqnrDb);
      if (!x.hasWgradRht) continue;
      ++f.sameTensorRecords;
      plain.add(x.wgradPlainSqnrDb);
      rht.add(x.wgradRhtSqnrDb);
      plainZ.add(x.wgradPlainUnderflow);
      rhtZ.add(x.wgradRhtUnderflow);
    }
  f.forwardSqnr = fwd.value();
  f.gradientSqnr = grad.value();
  f.plainSqnr = plain.value();
  f.rhtSqnr = rht.value();
  f.plainFlushed = plainZ.value();
  f.rhtFlushed = rhtZ.value();
  return f;
}

QString db(double v) { return std::isfinite(v) ? QString::number(v, 'f', 1) + tr(" dB") : tr("not measured"); }

}  // namespace

void fourBitsResult(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  out.claim = tr("NVFP4 keeps about 20 dB of signal over its rounding noise (SQNR) on every operand. The "
                 "random Hadamard transform, measured on the same weight-gradient operands with and without "
                 "it, changes their SQNR by less than 1.5 dB either way on this small model, which has no "
                 "outliers for it to spread. Stochastic rounding costs the gradients 2 dB of SQNR or more, the "
                 "price of rounding without bias. The validation losses are set against two bf16 seeds.");
  out.chart = QStringLiteral("loss");
  const ui::RunData* bf16 = variant(runs, QStringLiteral("bf16"));
  const ui::RunData* seed2 = variant(runs, QStringLiteral("bf16_other_seed"));
  const ui::RunData* plain = variant(runs, QStringLiteral("nvfp4"));
  const ui::RunData* rht = variant(runs, QStringLiteral("nvfp4_rht"));
  const ui::RunData* sr = variant(runs, QStringLiteral("nvfp4_rht_sr"));
  const double lb = bf16 ? finalTestLoss(*bf16) : std::nan("");
  QHash<const ui::RunData*, Fp4Figures> figures;  // each nvfp4 run's, for its finding and the verdict
  for (const ui::RunData* r : runs)
    if (r->config.mode == PrecisionMode::Fp8) figures.insert(r, fp4Figures(*r));
  for (const ui::RunData* r : runs) {
    const double v = finalTestLoss(*r);
    QString text = tr("validation loss %1 after %2 steps").arg(number(v)).arg(r->series.size());
    if (r != bf16 && std::isfinite(lb) && std::isfinite(v)) text += tr(" (%1 against bf16's)").arg(number(v - lb));
    if (figures.contains(r)) {
      const Fp4Figures& f = figures[r];
      text += tr("; SQNR forward %1, gradients %2; weight-gradient operands, the same values: %3 and %4 "
                 "flushed without the transform, %5 and %6 with it")
                  .arg(db(f.forwardSqnr), db(f.gradientSqnr), db(f.plainSqnr), percent(f.plainFlushed),
                       db(f.rhtSqnr), percent(f.rhtFlushed));
    }
    addFinding(out, *r, text);
  }
  if (!bf16 || !seed2 || !plain || !rht || !sr)
    return missingRuns(out, {QStringLiteral("bf16"), QStringLiteral("bf16_other_seed"), QStringLiteral("nvfp4"),
                             QStringLiteral("nvfp4_rht"), QStringLiteral("nvfp4_rht_sr")});

  const Fp4Figures fp = figures.value(plain), fr = figures.value(rht), fs = figures.value(sr);
  // 1. Every nvfp4 run's forward operands near E2M1's SQNR (about 20 dB for Gaussian-like values).
  bool forwardNear20 = true;
  double plainSum = 0, rhtSum = 0;
  int sameTensor = 0;
  for (const Fp4Figures& f : {fp, fr, fs}) {
    forwardNear20 = forwardNear20 && f.forwardSqnr >= 17 && f.forwardSqnr <= 23;
    if (std::isfinite(f.plainSqnr) && std::isfinite(f.rhtSqnr)) {
      plainSum += f.plainSqnr * f.sameTensorRecords;
      rhtSum += f.rhtSqnr * f.sameTensorRecords;
      sameTensor += f.sameTensorRecords;
    }
  }
  // 2. The transform's effect on the same values, pooled over the three nvfp4 runs.
  const double rhtGain = sameTensor ? (rhtSum - plainSum) / sameTensor : std::nan("");
  // 3. Stochastic rounding against round-to-nearest, both with the transform: the gradients' SQNR.
  const double srCost = fr.gradientSqnr - fs.gradientSqnr;
  out.verdict = verdictOf(forwardNear20 && std::isfinite(rhtGain) && std::fabs(rhtGain) < 1.5 &&
                          std::isfinite(srCost) && srCost >= 2);
  out.criterion = tr("forward SQNR %1, %2 and %3 (17 to 23 dB expected); the transform moved the weight-gradient "
                     "operands' SQNR by %4 dB on the same values, %5 records (less than 1.5 dB either way "
                     "expected); stochastic rounding cost the gradients %6 dB (2 or more expected)")
                      .arg(db(fp.forwardSqnr), db(fr.forwardSqnr), db(fs.forwardSqnr), QString::number(rhtGain, 'f', 2))
                      .arg(sameTensor)
                      .arg(QString::number(srCost, 'f', 2));
  const double spread = std::fabs(finalTestLoss(*seed2) - lb);
  double widest = 0;
  for (const ui::RunData* r : {plain, rht, sr}) widest = std::max(widest, std::fabs(finalTestLoss(*r) - lb));
  const bool within = std::isfinite(spread) && std::isfinite(widest) && widest <= spread;
  out.note = tr("Not judged: the losses. Two bf16 runs that differ only in their seed ended %1 apart; the nvfp4 "
                "runs ended %2, %3 and %4 from bf16's %5: %6. NVIDIA's NVFP4 recipe uses the transform and "
                "stochastic rounding for what they do over long training of large models (reported at 12B "
                "parameters), not over 40 steps.")
                 .arg(number(spread), number(finalTestLoss(*plain) - lb), number(finalTestLoss(*rht) - lb),
                      number(finalTestLoss(*sr) - lb), number(lb),
                      within ? tr("all within the seeds' gap, so these losses cannot rank the recipes")
                             : tr("one or more beyond the seeds' gap, which two seeds cannot tell from chance"));
  if (bf16->config.seed == seed2->config.seed)
    out.note += tr(" The two bf16 runs share their seed (%1) here, so their gap measures nothing: give this lesson "
                   "another seed.").arg(QString::number(qulonglong(bf16->config.seed)));
}

}  // namespace amp::gui
