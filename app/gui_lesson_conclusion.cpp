#include "app/gui_lesson_conclusion.h"

#include <QCoreApplication>
#include <algorithm>
#include <cmath>

#include "engine/config/presets.h"
#include "engine/core/memory_tracker.h"
#include "engine/train/event_text.h"
#include "engine/train/run_summary.h"
#include "ui/run_data.h"

namespace amp::gui {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("LessonConclusion", text); }

QString percent(double f) {
  // Two digits where they matter: 99.5% and 0.3% both make the point, 100% and 0% too.
  const double p = 100 * f;
  if (p == 0 || p == 100) return QStringLiteral("%1%").arg(p, 0, 'f', 0);
  return QStringLiteral("%1%").arg(p, 0, 'f', p < 1 || p > 99 ? 2 : 1);
}

QString lossText(const ui::RunData& r) {
  if (r.series.loss.isEmpty()) return tr("no steps");
  const double loss = r.summary.summary().finalLoss;  // as the runs table shows it
  return std::isfinite(loss) ? QString::number(loss, 'g', 4) : tr("non-finite");
}

double meanOf(const QVector<double>& v) {
  if (v.isEmpty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / v.size();
}

QString tensorName(const QString& key) { return key.section(QLatin1Char('|'), 1); }

// "fp32 0.632, fp16_noscale 0.693, ...": every run's final loss.
QString finalLosses(const QVector<const ui::RunData*>& runs) {
  QStringList parts;
  for (const ui::RunData* r : runs) parts << QStringLiteral("%1 %2").arg(variantLabel(*r), lossText(*r));
  return tr("final loss: %1").arg(parts.join(QStringLiteral(", ")));
}

QString underflowConclusion(const Preset& p, const QVector<const ui::RunData*>& runs) {
  const QString key = QString::fromStdString(p.focus);
  QStringList parts;
  for (const ui::RunData* r : runs) {
    const double z = zeroFraction(*r, key);
    if (z >= 0) parts << QStringLiteral("%1 %2").arg(variantLabel(*r), percent(z));
  }
  return tr("%1's gradients that were zero (flushed): %2; %3")
      .arg(tensorName(key), parts.join(QStringLiteral(", ")), finalLosses(runs));
}

QString overflowConclusion(const QVector<const ui::RunData*>& runs) {
  QStringList parts;
  for (const ui::RunData* r : runs) {
    QStringList steps;
    for (double s : r->series.skippedStep) steps << QString::number(qint64(s));
    const auto& scale = r->series.scale;
    const double low = scale.isEmpty() ? 0 : *std::min_element(scale.begin(), scale.end());
    const double last = scale.isEmpty() ? 0 : scale.last();
    parts << tr("%1: %2 steps skipped (%3), scale down to %4 and back to %5")
                 .arg(variantLabel(*r))
                 .arg(steps.size())
                 .arg(steps.isEmpty() ? tr("none") : steps.join(QStringLiteral(", ")),
                      QString::fromStdString(formatScale(low)), QString::fromStdString(formatScale(last)));
  }
  return parts.join(QStringLiteral("; "));
}

QString lostUpdatesConclusion(const QVector<const ui::RunData*>& runs) {
  QStringList parts;
  for (const ui::RunData* r : runs) {
    const auto& loss = r->series.loss;
    parts << tr("%1 lost %2 of its updates, loss %3 → %4")
                 .arg(variantLabel(*r), percent(meanOf(r->series.lostUpdateFrac)),
                      loss.isEmpty() ? QString() : QString::number(loss.first(), 'g', 4), lossText(*r));
  }
  return parts.join(QStringLiteral("; "));
}

// fp32 vs fp16 vs bf16: final loss (and accuracy), the median step time and the peak memory
// against fp32's, the figures the runs table shows (its summary: warm-up steps left out).
QString modesConclusion(const QVector<const ui::RunData*>& runs) {
  const ui::RunData* fp32 = nullptr;
  for (const ui::RunData* r : runs)
    if (r->config.mode == PrecisionMode::Fp32) fp32 = r;
  const RunSummary base = fp32 ? fp32->summary.summary() : RunSummary{};
  QStringList parts;
  for (const ui::RunData* r : runs) {
    const RunSummary s = r->summary.summary();
    QString part = tr("%1 reached loss %2").arg(variantLabel(*r), lossText(*r));
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
    if (base.medianStepMs > 0 && r != fp32 && s.medianStepMs > 0)
      part += tr(" (%1x fp32's speed)").arg(base.medianStepMs / s.medianStepMs, 0, 'f', 2);
    const double peak = double(s.peakMemory.totalPeak), basePeak = double(base.peakMemory.totalPeak);
    part += tr(", peak memory %1").arg(QString::fromStdString(formatBytes(std::int64_t(peak))));
    if (basePeak > 0 && r != fp32 && peak > 0) part += tr(" (%1x fp32's)").arg(peak / basePeak, 0, 'f', 2);
    parts << part;
  }
  return parts.join(QStringLiteral("; "));
}

// The seeds' table in a sentence per run: test accuracy, time per epoch, activation memory,
// the checkpoint and the weights file, each against fp32's (the runs table's figures).
QString resnetConclusion(const QVector<const ui::RunData*>& runs) {
  const ui::RunData* fp32 = nullptr;
  for (const ui::RunData* r : runs)
    if (r->config.mode == PrecisionMode::Fp32) fp32 = r;
  const RunSummary base = fp32 ? fp32->summary.summary() : RunSummary{};
  auto against = [&](const ui::RunData* r, double value, double baseValue) {
    return r != fp32 && value > 0 && baseValue > 0 ? tr(" (%1x)").arg(value / baseValue, 0, 'f', 2) : QString();
  };
  const int act = int(MemCategory::Activations);
  QStringList parts;
  for (const ui::RunData* r : runs) {
    const RunSummary s = r->summary.summary();
    QString part = variantLabel(*r) + QLatin1Char(':');
    part += r->series.testAcc.isEmpty() ? tr(" no test accuracy yet")
                                        : tr(" accuracy %1").arg(percent(r->series.testAcc.last()));
    if (!s.epochSeconds.empty()) {
      const double e = median(s.epochSeconds), be = base.epochSeconds.empty() ? 0 : median(base.epochSeconds);
      part += tr(", %1 s/epoch%2").arg(e, 0, 'f', 1).arg(against(r, e, be));
    }
    const double a = double(s.peakMemory.peak[act]), ba = double(base.peakMemory.peak[act]);
    part += tr(", activations %1%2").arg(QString::fromStdString(formatBytes(std::int64_t(a))), against(r, a, ba));
    if (r->checkpointBytes > 0)
      part += tr(", checkpoint %1%2")
                  .arg(QString::fromStdString(formatBytes(r->checkpointBytes)),
                       against(r, double(r->checkpointBytes), fp32 ? double(fp32->checkpointBytes) : 0));
    if (r->weightsBytes > 0)
      part += tr(", %1 weights %2%3")
                  .arg(r->weightsDtype, QString::fromStdString(formatBytes(r->weightsBytes)),
                       against(r, double(r->weightsBytes), fp32 ? double(fp32->weightsBytes) : 0));
    parts << part;
  }
  return parts.join(QStringLiteral("; "));
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

QStringList lessonConclusion(const Preset& p, const QVector<const ui::RunData*>& runs) {
  const bool anySteps = std::any_of(runs.begin(), runs.end(), [](const ui::RunData* r) { return r->series.size() > 0; });
  if (!anySteps) return {};
  QString text;
  if (p.name == "underflow" || p.name == "bf16-no-scaler")
    text = underflowConclusion(p, runs);
  else if (p.name == "overflow")
    text = overflowConclusion(runs);
  else if (p.name == "pure-fp16")
    text = lostUpdatesConclusion(runs);
  else if (p.name == "resnet")
    text = resnetConclusion(runs);
  else
    text = modesConclusion(runs);
  return {tr("Lesson '%1' measured: %2").arg(QString::fromStdString(p.title), text)};
}

}  // namespace amp::gui
