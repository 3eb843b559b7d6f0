#include "ui/run_groups.h"

#include <QObject>

#include "ui/config_diff.h"
#include "ui/run_data.h"

namespace amp::ui {

namespace {

QString commonPrefix(const QVector<RunConfig>& configs) {
  QString prefix = QString::fromStdString(configs.first().name);
  for (const RunConfig& c : configs) {
    const QString name = QString::fromStdString(c.name);
    int n = 0;
    while (n < prefix.size() && n < name.size() && prefix[n] == name[n]) ++n;
    prefix.truncate(n);
  }
  return prefix;
}

}  // namespace

QString groupNameFor(const QVector<RunConfig>& configs, const QSet<QString>& existingGroups) {
  if (configs.size() < 2) return {};
  const QString prefix = commonPrefix(configs);
  QString base;
  const qsizetype slash = prefix.indexOf(QLatin1Char('/'));
  if (slash > 0) {
    base = prefix.left(slash);  // a lesson: "underflow/fp32", "underflow/fp16"
  } else {
    // Twin runs: "spirals fp32", "spirals fp16" share "spirals "; cut at a word boundary so
    // "mlp fp16" and "mlp fp32" do not make "mlp fp".
    QString stem = prefix;
    if (!stem.endsWith(QLatin1Char(' ')) && stem.contains(QLatin1Char(' ')))
      stem.truncate(stem.lastIndexOf(QLatin1Char(' ')));
    stem = stem.trimmed();
    if (stem.isEmpty()) stem = QString::fromStdString(configs.first().model.name);
    base = QObject::tr("%1 twins").arg(stem);
  }
  QString name = base;
  for (int n = 2; existingGroups.contains(name); ++n) name = QStringLiteral("%1 #%2").arg(base).arg(n);
  return name;
}

const RunData* automaticBaseline(const RunData& run, const QVector<RunData*>& runs) {
  if (!run.group.isEmpty())
    for (const RunData* r : runs)
      if (r->group == run.group && r->config.mode == PrecisionMode::Fp32) return r;
  if (run.config.mode == PrecisionMode::Fp32) return &run;
  // No group (or a group without fp32): the newest fp32 run of the same workload.
  const RunData* best = nullptr;
  for (const RunData* r : runs)
    if (r->config.mode == PrecisionMode::Fp32 && workloadDifferences(r->config, run.config).isEmpty()) best = r;
  return best;
}

}  // namespace amp::ui
