// What every lesson's conclusion is built from (gui_lesson_conclusion.cpp for the classic
// lessons, gui_lesson_conclusion_fp8.cpp for the fp8 ones): the runs by variant, a finding per
// run, the verdict, and the numbers as the panel writes them. One copy, so both files word and
// decide alike.
#pragma once

#include <QCoreApplication>
#include <QStringList>
#include <QVector>
#include <cmath>

#include "app/gui_lesson_conclusion.h"
#include "ui/lesson_result.h"
#include "ui/run_data.h"

namespace amp::gui::conclusion {

using Verdict = ui::LessonResult::Verdict;

inline QString tr(const char* text) { return QCoreApplication::translate("LessonConclusion", text); }

// A figure to 4 significant digits, or "non-finite".
inline QString number(double v) { return std::isfinite(v) ? QString::number(v, 'g', 4) : tr("non-finite"); }

// The run of a lesson's variant (its label: "fp16_noscale"), or nullptr when it is not there.
inline const ui::RunData* variant(const QVector<const ui::RunData*>& runs, const QString& label) {
  for (const ui::RunData* r : runs)
    if (variantLabel(*r) == label) return r;
  return nullptr;
}

inline void addFinding(ui::LessonResult& out, const ui::RunData& r, const QString& text) {
  out.findings.append({r.id, variantLabel(r), r.color, text});
}

inline Verdict verdictOf(bool confirmed) { return confirmed ? Verdict::Confirmed : Verdict::NotConfirmed; }

// A lesson whose runs are not all there (one deleted, an experiment saved half-way) can state
// what it measured but not decide its claim.
inline void missingRuns(ui::LessonResult& out, const QStringList& labels) {
  out.verdict = Verdict::Inconclusive;
  out.criterion = tr("the lesson needs its %1 runs to decide").arg(labels.join(QStringLiteral(", ")));
}

// The last evaluated test loss, NaN before any evaluation.
inline double finalTestLoss(const ui::RunData& r) {
  return r.series.testLoss.isEmpty() ? std::nan("") : r.series.testLoss.back();
}

// A share as a percentage: two digits where they matter (99.5% and 0.3% both make the point,
// 100% and 0% too); "n/a" for a share that could not be measured.
inline QString percent(double f) {
  if (!std::isfinite(f)) return tr("n/a");
  const double p = 100 * f;
  if (p == 0 || p == 100) return QStringLiteral("%1%").arg(p, 0, 'f', 0);
  return QStringLiteral("%1%").arg(p, 0, 'f', p < 1 || p > 99 ? 2 : 1);
}

// The training loss as the runs table shows it (the mean of the last ten losses); NaN before the
// first step.
inline double finalLoss(const ui::RunData& r) {
  return r.series.loss.isEmpty() ? std::nan("") : r.summary.summary().finalLoss;
}

}  // namespace amp::gui::conclusion
