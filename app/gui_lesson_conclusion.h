// The sentence a lesson ends with, measured from its runs' data: what its explanation promised,
// in numbers this machine produced ("fp16 without scaling: 100% of 0.weight's gradients were
// zero; fp16 with dynamic scaling: 0.3%"). One function per kind of lesson; presets without
// their own get the final losses side by side.
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>

namespace amp {
struct Preset;
}
namespace amp::ui {
struct RunData;
}

namespace amp::gui {

// runs: the lesson's runs, in the order of its variants. Empty when there is nothing to say
// (no run has a step).
QStringList lessonConclusion(const Preset& preset, const QVector<const ui::RunData*>& runs);

// The variant label of a lesson run ("fp16_noscale" for "underflow/fp16_noscale").
QString variantLabel(const ui::RunData& run);

// Of every recorded frame of `tensorKey` ("weight_grad|0.weight"), the fraction of values that
// were zero as stored (or that rounding flushed to zero, where the engine measured it);
// -1 when the run has no such frames.
double zeroFraction(const ui::RunData& run, const QString& tensorKey);

}  // namespace amp::gui
