// The colours runs are drawn in. A precision keeps one colour everywhere (every lesson, both
// themes, after a clear), so a class learns "orange is fp16" once: fp32 blue, fp16 with loss
// scaling orange, fp16 without a scaler red, bf16 green, pure fp16 purple. A second run of a
// precision already on screen (twin runs with another learning rate, a scaler comparison) takes
// the first free colour of a second palette that shares no colour with those five. A run keeps
// its colour for its lifetime. Every colour stands out from both themes' chart backgrounds
// (contrast at least 3:1, WCAG's figure for graphics; the old palette's pale pink, yellow and
// grey had 1.6-2.1 on white).
#pragma once

#include <QColor>
#include <vector>

#include "engine/config/run_config.h"

namespace amp::ui {

enum class PrecisionFamily { Fp32, Fp16, Fp16Unscaled, Bf16, PureFp16 };

PrecisionFamily precisionFamily(const RunConfig& config);
QColor precisionColor(PrecisionFamily family);
// The second palette, for runs whose precision's colour is taken: `index` cycles through it.
QColor extraRunColor(int index);
int extraRunColorCount();

// The colour for a new run of `config`, given the colours of the runs still listed: its
// precision's own if no listed run has it, else the first extra colour nobody has that is also
// far (colourDifference >= kDistinctRunColours) from every listed one, else the free one farthest
// from them (cycling when all are taken). A second fp8 run beside the first (bf16's green) took
// teal, ΔE 40 from it: the two lines read as one.
// CIE76 colour difference (CIELAB, D65): about 2.3 is just noticeable; under 50 two line colours
// of similar lightness are easily confused, on the dark chart most of all.
double colourDifference(const QColor& a, const QColor& b);
constexpr double kDistinctRunColours = 50.0;
QColor colorForNewRun(const RunConfig& config, const std::vector<QColor>& inUse);

// WCAG 2 contrast ratio of two colours (1 to 21), from their relative luminance.
double contrastRatio(const QColor& a, const QColor& b);

}  // namespace amp::ui
