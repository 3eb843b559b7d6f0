// The language-model lessons' conclusions: "gpt" (a transformer learns under AMP) and
// "gpt-fp32-ops" (what autocast's fp32 list costs and buys at this size). Apart from
// gui_lesson_conclusion.cpp, whose figures (percent, losses) they word the same way.
#include <QCoreApplication>
#include <algorithm>
#include <cmath>

#include "app/gui_lesson_conclusion.h"
#include "app/gui_lesson_conclusion_parts.h"
#include "engine/core/memory_tracker.h"
#include "ui/run_data.h"

namespace amp::gui {

namespace {

using namespace conclusion;

// The peak of the activations (the runs table's category), 0 when not measured.
double activationPeak(const ui::RunData& r) {
  return double(r.summary.summary().peakMemory.peak[int(MemCategory::Activations)]);
}

}  // namespace

// "A transformer language model": the validation loss against a uniform guess over the bytes.
void languageModelResult(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  const double uniform = std::log(256.0);
  out.claim = tr("A byte-level transformer learns under AMP: its validation loss falls far below a "
                 "uniform guess over 256 bytes (ln 256 = %1, 8 bits per byte).")
                  .arg(number(uniform));
  out.chart = QStringLiteral("loss");
  bool all = !runs.isEmpty();
  QStringList losses;
  for (const ui::RunData* r : runs) {
    const double v = finalTestLoss(*r);
    const QString acc = r->series.testAcc.isEmpty() ? tr("no accuracy yet")
                                                    : tr("next-byte accuracy %1").arg(percent(r->series.testAcc.last()));
    addFinding(out, *r, tr("validation loss %1 (%2 bits per byte) after %3 steps, %4, %5 skipped")
                            .arg(number(v), number(v / std::log(2.0)))
                            .arg(r->series.size())
                            .arg(acc)
                            .arg(r->summary.summary().skippedSteps));
    all = all && std::isfinite(v) && v <= 0.6 * uniform;
    losses << number(v);
  }
  out.verdict = verdictOf(all);
  out.criterion = tr("validation loss %1 against a uniform guess's %2: at most 60% of it (%3) expected")
                      .arg(losses.join(QStringLiteral(", ")), number(uniform), number(0.6 * uniform));
}

// "What autocast's fp32 list costs": softmax, then layer_norm too, moved to the 16-bit list.
// Their kernels compute in fp32 either way (as PyTorch's do) and each output feeds a matmul that
// rounds it to fp16 anyway, so the forward pass is the same (the three runs' first losses agree
// to 6 digits) and only the backward's rounding differs. What the list costs is memory, where
// an fp32 output outlives its matmul's fp16 copy: softmax's probabilities, which its backward
// keeps (the largest activations at this context), but not layer_norm's rows, freed once the
// next matmul has cast them. The lesson claims what its three runs show, in their own numbers.
// (It claimed "why they stay in fp32", which a model this small never shows: issue 38.)
void fp32OpsResult(const QVector<const ui::RunData*>& runs, ui::LessonResult& out) {
  // Within 1% of the validation loss: the curves lie on one line at this size (measured 0.01%
  // apart), while a 16-bit op that hurt training (a layer_norm input past fp16's range, rows
  // whose spread its 11 bits cannot hold) moves it by far more or makes it non-finite.
  constexpr double kSameLoss = 0.01;
  // The fp32 probabilities (batch x heads x block x block, kept for softmax's backward beside
  // their fp16 copy) were a quarter of the peak (66.1 MiB against 50.1): 0.9x or less.
  constexpr double kSoftmaxSaves = 0.9;
  // layer_norm's fp32 rows are gone before the peak: within 2% of the softmax run's peak.
  constexpr double kLayerNormSame = 0.02;
  out.claim = tr("At this size, softmax and layer_norm in fp16 change the validation loss by less than 1%: their "
                 "kernels compute in fp32 either way, and the next matmul rounds their outputs to fp16 anyway. "
                 "The fp32 list costs memory where an fp32 output is kept: softmax's probabilities, for its "
                 "backward; layer_norm's rows are freed once the matmul has its fp16 copy.");
  // The memory chart: the loss curves lie on one line, the activations' peaks do not.
  out.chart = QStringLiteral("memory");
  const ui::RunData* base = variant(runs, QStringLiteral("fp32_lists"));
  for (const ui::RunData* r : runs) {
    const double v = finalTestLoss(*r);
    QString text = tr("validation loss %1 (%2 bits per byte)").arg(number(v), number(v / std::log(2.0)));
    if (base && r != base && std::isfinite(v) && std::isfinite(finalTestLoss(*base))) {
      const double change = 100 * (v - finalTestLoss(*base)) / finalTestLoss(*base);
      // "0.00%", not "-0.00%", for a change under half a hundredth of a percent.
      text += tr(", %1% from PyTorch's lists").arg(std::abs(change) < 0.005 ? 0.0 : change, 0, 'f', 2);
    }
    text += tr(", activations peak %1").arg(QString::fromStdString(formatBytes(std::int64_t(activationPeak(*r)))));
    if (base && r != base && activationPeak(*base) > 0)
      text += tr(" (%1x theirs)").arg(activationPeak(*r) / activationPeak(*base), 0, 'f', 2);
    addFinding(out, *r, text);
  }
  out.note = tr("Not shown here: a layer_norm input past 65504 or with a large common offset loses everything in "
                "fp16 (the 16-bit kernel reads it rounded), which the fp32 list guards against; attention logits "
                "past fp16's range overflow in the scores matmul, on the 16-bit list either way.");
  const ui::RunData* soft = variant(runs, QStringLiteral("softmax_fp16"));
  const ui::RunData* both = variant(runs, QStringLiteral("softmax_layernorm_fp16"));
  if (!base || !soft || !both)
    return missingRuns(out, {QStringLiteral("fp32_lists"), QStringLiteral("softmax_fp16"),
                             QStringLiteral("softmax_layernorm_fp16")});
  const double b = finalTestLoss(*base), ls = finalTestLoss(*soft), lb = finalTestLoss(*both);
  // Losses that agree test nothing where nothing was learned: the baseline's validation loss
  // must have fallen below a uniform guess over the bytes by a tenth.
  const double uniform = std::log(256.0);
  if (std::isfinite(b) && b > 0.9 * uniform) {
    out.verdict = Verdict::Inconclusive;
    out.notMeasurable = true;
    out.criterion = tr("the validation loss with PyTorch's lists is %1, not below 90% of a uniform guess's %2: "
                       "nothing was learned, so losses that agree test nothing")
                        .arg(number(b), number(uniform));
    return;
  }
  auto near = [&](double x) { return std::isfinite(x) && std::isfinite(b) && std::abs(x - b) <= kSameLoss * b; };
  const double ab = activationPeak(*base), as = activationPeak(*soft), al = activationPeak(*both);
  const bool measured = ab > 0 && as > 0 && al > 0;
  const bool memory = measured && as <= kSoftmaxSaves * ab && std::abs(al - as) <= kLayerNormSame * as;
  out.verdict = verdictOf(near(ls) && near(lb) && memory);
  out.criterion = tr("validation losses %1 (softmax in fp16) and %2 (softmax and layer_norm) against %3 with "
                     "PyTorch's lists: within 1% expected; activations' peak %4x and %5x of theirs: 0.9x or "
                     "less with softmax in fp16, the same again (within 2%) with layer_norm")
                      .arg(number(ls), number(lb), number(b))
                      .arg(ab > 0 ? as / ab : 0.0, 0, 'f', 2)
                      .arg(ab > 0 ? al / ab : 0.0, 0, 'f', 2);
}

}  // namespace amp::gui
