// What a lesson ends with, measured from its runs' data: the claim its explanation makes, each
// run's finding in numbers this machine produced ("fp16_noscale: 100% of 0.weight's gradients
// were zero, final loss 0.7047") and a verdict against a stated criterion. One function per kind
// of lesson; presets without their own compare the precisions' final losses and accuracy.
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>

#include "ui/lesson_result.h"

namespace amp {
struct Preset;
}
namespace amp::ui {
struct RunData;
}

namespace amp::gui {

// runs: the lesson's runs, in the order of its variants. Empty (no findings) when there is
// nothing to say yet (no run has a step). turnBlockSteps: the block of steps the runs trained
// in turns with (RunController::enqueueInTurns), so their speed is compared round by round; 0
// when they trained one after another.
ui::LessonResult lessonResult(const Preset& preset, const QVector<const ui::RunData*>& runs, int turnBlockSteps = 0);

// The language-model lessons (gui_lesson_conclusion_gpt.cpp): "gpt" and "gpt-fp32-ops".
void languageModelResult(const QVector<const ui::RunData*>& runs, ui::LessonResult& out);
void fp32OpsResult(const QVector<const ui::RunData*>& runs, ui::LessonResult& out);

// The fp8 lessons (gui_lesson_conclusion_fp8.cpp): fills `out` and returns true for one of
// them, false for any other preset.
bool fp8LessonResult(const Preset& preset, const QVector<const ui::RunData*>& runs, ui::LessonResult& out);
// The fp4 lesson (gui_lesson_conclusion_fp4.cpp), which fp8LessonResult hands on.
void fourBitsResult(const QVector<const ui::RunData*>& runs, ui::LessonResult& out);

// The variant label of a lesson run ("fp16_noscale" for "underflow/fp16_noscale").
QString variantLabel(const ui::RunData& run);

// Of every recorded frame of `tensorKey` ("weight_grad|0.weight"), the fraction of values that
// were zero as stored (or that rounding flushed to zero, where the engine measured it);
// -1 when the run has no such frames.
double zeroFraction(const ui::RunData& run, const QString& tensorKey);

}  // namespace amp::gui
