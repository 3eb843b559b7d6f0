#include "ui/runs_model.h"

#include <QBrush>
#include <QFont>
#include <algorithm>
#include <cmath>

#include "engine/amp/fp8_context.h"
#include "engine/core/memory_tracker.h"
#include "ui/config_diff.h"
#include "ui/run_groups.h"
#include "ui/speed_ratio.h"
#include "ui/theme.h"

namespace amp::ui {

RunsModel::RunsModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunsModel::addRun(RunData* run) {
  beginInsertRows({}, m_runs.size(), m_runs.size());
  m_runs.append(run);
  m_summaries[run->id] = run->summary.summary();
  endInsertRows();
  baselinesChanged();  // a new fp32 run may be the baseline of others
}

void RunsModel::removeRun(int id) {
  const int row = rowOf(id);
  if (row < 0) return;
  beginRemoveRows({}, row, row);
  m_runs.removeAt(row);
  m_summaries.erase(id);
  endRemoveRows();
  if (m_baselineId == id) setBaselineId(0);
  else baselinesChanged();
}

RunData* RunsModel::runAt(int row) const {
  return row >= 0 && row < m_runs.size() ? m_runs[row] : nullptr;
}

int RunsModel::rowOf(int id) const {
  for (int i = 0; i < m_runs.size(); ++i)
    if (m_runs[i]->id == id) return i;
  return -1;
}

void RunsModel::setBaselineId(int id) {
  if (id == m_baselineId) return;
  m_baselineId = id;
  baselinesChanged();
  emit baselineChanged(id);
}

void RunsModel::baselinesChanged() {
  m_baselines.clear();
  m_speeds.clear();
  if (!m_runs.isEmpty()) emit dataChanged(index(0, SpeedUp), index(m_runs.size() - 1, MemoryRatio));
}

void RunsModel::setRunVisible(int id, bool visible) {
  const int row = rowOf(id);
  if (row < 0 || m_runs[row]->visible == visible) return;
  m_runs[row]->visible = visible;
  emit dataChanged(index(row, Name), index(row, Name), {Qt::CheckStateRole});
  emit visibilityChanged(id, visible);
}

void RunsModel::setRunArchived(int id, bool archived) {
  const int row = rowOf(id);
  if (row < 0 || m_runs[row]->archived == archived) return;
  m_runs[row]->archived = archived;
  emit dataChanged(index(row, 0), index(row, ColumnCount - 1));  // the filter and the row's style
  emit archivedChanged(id, archived);
}

int RunsModel::archivedCount() const {
  return int(std::count_if(m_runs.begin(), m_runs.end(), [](const RunData* r) { return r->archived; }));
}

void RunsModel::refresh() {
  for (const RunData* r : std::as_const(m_runs)) m_summaries[r->id] = r->summary.summary();
  m_baselines.clear();  // groups may have been set since
  m_speeds.clear();
  if (!m_runs.isEmpty()) emit dataChanged(index(0, 0), index(m_runs.size() - 1, ColumnCount - 1));
}

void RunsModel::refreshRun(const RunData* run) {
  const int row = rowOf(run->id);
  if (row < 0) return;
  m_summaries[run->id] = run->summary.summary();
  m_baselines.clear();
  m_speeds.clear();  // this run's steps, and every run's it is the baseline of
  emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
  // Every ratio depends on a baseline, and this run may be one: the ratio columns change with it.
  if (m_runs.size() > 1) emit dataChanged(index(0, SpeedUp), index(m_runs.size() - 1, MemoryRatio));
}

int RunsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : m_runs.size(); }
int RunsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

bool RunsModel::precisionGuessed(const RunData& r) {
  // tensorboard_import.cpp's externalConfig: model "external" where the log had no config.
  return r.config.model.name == "external" &&
         r.external.value(QStringLiteral("source")).toObject().value(QStringLiteral("kind")).toString() ==
             QLatin1String("tensorboard");
}

QString RunsModel::modeText(const RunConfig& c) {
  switch (c.mode) {
    case PrecisionMode::Fp32: return QStringLiteral("fp32");
    case PrecisionMode::AmpFp16: return c.scalerActive() && c.scaler.kind != ScalerKind::None
                                            ? QStringLiteral("AMP fp16")
                                            : QStringLiteral("AMP fp16 unscaled");
    case PrecisionMode::AmpBf16: return QStringLiteral("AMP bf16");
    case PrecisionMode::PureFp16: return QStringLiteral("pure fp16");
    case PrecisionMode::Fp8: return QString::fromStdString(describeFp8Recipe(c.fp8));
  }
  return {};
}

QString RunsModel::settingsText(const RunConfig& c) {
  QString model = QString::fromStdString(c.model.name);
  if (c.model.name == "recipe_mlp") model += QStringLiteral(" %1×%2").arg(c.model.layers).arg(c.model.width);
  else if (c.model.name == "mlp") {
    QStringList h;
    for (auto x : c.model.hidden) h << QString::number(x);
    model += QLatin1Char(' ') + h.join(QLatin1Char('-'));
  }
  return QStringLiteral("%1 · %2 · %3 lr %4 · bs %5 · seed %6")
      .arg(model, QString::fromStdString(c.data.name), QString::fromStdString(c.optimizer.name))
      .arg(c.optimizer.lr, 0, 'g', 3)
      .arg(c.train.batchSize)
      .arg(c.seed);
}

QString RunsModel::formatBytes(double bytes) {
  // The event log's units (engine formatBytes: KiB, MiB, GiB), so that one size reads the same
  // in the table and in the lesson's conclusion (the table said "29.4 MB" where the log said
  // "28.0 MiB").
  return QString::fromStdString(amp::formatBytes(std::int64_t(std::llround(bytes))));
}

const RunSummary* RunsModel::summaryOf(int runId) const {
  auto it = m_summaries.find(runId);
  return it == m_summaries.end() || it->second.steps == 0 ? nullptr : &it->second;
}

RunsModel::Baseline RunsModel::baselineOf(const RunData& run) const {
  if (auto it = m_baselines.find(run.id); it != m_baselines.end()) return it->second;
  Baseline b;
  const RunData* base = nullptr;
  if (m_baselineId != 0) {
    const int row = rowOf(m_baselineId);
    base = row >= 0 ? m_runs[row] : nullptr;
  } else {
    base = automaticBaseline(run, m_runs);
  }
  if (base) {
    b.id = base->id;
    if (base != &run) b.workloadKeys = workloadDifferences(base->config, run.config);
  }
  m_baselines[run.id] = b;
  return b;
}

const SpeedRatio& RunsModel::speedOf(const RunData& run) const {
  if (auto it = m_speeds.find(run.id); it != m_speeds.end()) return it->second;
  SpeedRatio s;
  const Baseline b = baselineOf(run);
  const int row = rowOf(b.id);
  if (row >= 0 && b.id != run.id) s = speedRatioOf(run, *m_runs[row]);
  return m_speeds[run.id] = s;
}

double RunsModel::columnBytes(const RunData& r, const RunSummary& s, int column) {
  switch (column) {
    case PeakActivations:
      return s.steps > 0 ? double(s.peakMemory.peak[int(MemCategory::Activations)]) : 0;
    case Checkpoint: return double(r.checkpointBytes);
    case WeightsFile: return double(r.weightsBytes);
    default: return 0;
  }
}

QString RunsModel::sizeWithRatio(const RunData& r, double bytes, int column) const {
  const QString size = formatBytes(bytes);
  const Baseline base = baselineOf(r);
  const RunSummary* bs = summaryOf(base.id);
  const int row = rowOf(base.id);
  if (!bs || row < 0 || base.id == r.id) return size;
  const double b = columnBytes(*m_runs[row], *bs, column);
  if (b <= 0) return size;
  const QString ratio = QStringLiteral("%1×").arg(bytes / b, 0, 'f', 2);
  return size + QStringLiteral(" · ") + (base.workloadKeys.isEmpty() ? ratio : QStringLiteral("⚠ ") + ratio);
}

QString RunsModel::ratioToolTip(const RunData& r, int column) const {
  const QString what = column == SpeedUp      ? tr("Baseline ms/step ÷ this run's (higher is faster)")
                       : column == MemoryRatio ? tr("This run's peak memory ÷ the baseline's (lower is leaner)")
                       : column == PeakActivations ? tr("This run's peak activation bytes ÷ the baseline's")
                       : column == Checkpoint      ? tr("This run's checkpoint size ÷ the baseline's")
                                                   : tr("This run's weights file size ÷ the baseline's");
  const Baseline b = baselineOf(r);
  const int row = rowOf(b.id);
  if (row < 0) return what + QLatin1Char('\n') + tr("No baseline: no fp32 run in its group or of the same workload.");
  const QString against = m_runs[row]->name;
  if (b.id == r.id) return what + QLatin1Char('\n') + tr("This run is the baseline.");
  // The speed-up says how it was taken against whom, and why it is too noisy to conclude where
  // it is (ui/speed_ratio.h).
  const QString how = column == SpeedUp ? speedRatioExplanation(speedOf(r), against) : QString();
  if (b.workloadKeys.isEmpty())
    return what + QLatin1Char('\n') + (how.isEmpty() ? tr("Against %1.").arg(against) : how);
  return tr("⚠ Against %1, which differs in %2: this compares different workloads, not precisions.")
             .arg(against, b.workloadKeys.join(QStringLiteral(", "))) +
         QLatin1Char('\n') + what + (how.isEmpty() ? QString() : QLatin1Char('\n') + how);
}

QVariant RunsModel::display(const RunData& r, const RunSummary& s, int column) const {
  const bool hasSteps = s.steps > 0;
  switch (column) {
    case Name: return r.name;
    case Mode: {
      // Never pretend: a 16-bit run that is emulated on this CPU says so in its row, and a run on
      // a GPU names it.
      QString text = modeText(r.config);
      if (r.config.dist.ranks > 1) text = tr("%1 ×%2 ranks").arg(text).arg(r.config.dist.ranks);
      if (r.backendName.startsWith(QLatin1String("cuda"))) text += QStringLiteral(" · %1").arg(r.backendName);
      if (r.computePath.contains(QLatin1String("emulated"))) text = tr("%1 (emulated)").arg(text);
      // A log that did not say its precision (a TensorBoard import without our config): the
      // mode was guessed from the loss scale, and the row says so as the CLI's warning does.
      if (precisionGuessed(r)) text = tr("%1? (guessed)").arg(text);
      return text;
    }
    case Settings: return settingsText(r.config);
    case Status: return r.archived ? tr("%1 · archived").arg(runStatusName(r.status)) : runStatusName(r.status);
    case Progress: return r.totalSteps > 0 ? QStringLiteral("%1/%2").arg(s.steps).arg(r.totalSteps)
                                           : QString::number(s.steps);
    case FinalLoss: return hasSteps ? QString::number(s.finalLoss, 'g', 4) : QString();
    case TestAcc: return s.finalTestAcc ? QStringLiteral("%1%").arg(*s.finalTestAcc * 100, 0, 'f', 1)
                                        : QString();
    case Skipped: return hasSteps ? QString::number(s.skippedSteps) : QString();
    case LostUpdates:
      // A run recorded outside AMP Studio (the PyTorch probe, TensorBoard) did not measure them.
      if (r.config.isExternal()) return hasSteps ? QStringLiteral("–") : QString();
      return hasSteps ? QStringLiteral("%1%").arg(s.meanLostUpdateFrac * 100, 0, 'f', 1) : QString();
    case MsPerStep: return s.medianStepMs > 0 ? QString::number(s.medianStepMs, 'f', 2) : QString();
    case PeakMemory:
      // An imported log without memory figures: not a measured 0 B.
      if (r.notLogged(QStringLiteral("memory"))) return hasSteps ? tr("not logged") : QString();
      return hasSteps ? formatBytes(double(s.peakMemory.totalPeak)) : QString();
    case EpochTime:
      return s.epochSeconds.empty() ? QString() : QString::number(median(s.epochSeconds), 'f', 1);
    case PeakActivations:
    case Checkpoint:
    case WeightsFile: {
      const double bytes = columnBytes(r, s, column);
      if (bytes <= 0) return {};
      QString text = sizeWithRatio(r, bytes, column);
      if (column == WeightsFile) text.insert(formatBytes(bytes).size(), QLatin1Char(' ') + r.weightsDtype);
      return text;
    }
    case SpeedUp:
    case MemoryRatio: {
      const Baseline base = baselineOf(r);
      const RunSummary* b = summaryOf(base.id);
      if (!b) return {};
      QString text;
      if (column == SpeedUp) {
        if (s.medianStepMs <= 0 || b->medianStepMs <= 0) return {};
        if (base.id == r.id) return tr("baseline");
        // Round by round where the two trained in turns, else their medians' ratio; "~1.3×
        // (noisy)" where the step times are too noisy to conclude (engine/train/speed_turns.h).
        text = speedRatioText(speedOf(r));
        if (text.isEmpty()) return {};
      } else {
        if (!hasSteps || b->peakMemory.totalPeak <= 0 || r.notLogged(QStringLiteral("memory"))) return {};
        if (base.id == r.id) return tr("baseline");
        text = QStringLiteral("%1×").arg(double(s.peakMemory.totalPeak) / double(b->peakMemory.totalPeak), 0, 'f', 2);
      }
      // Another workload: the figure stays visible, but never without the warning sign.
      return base.workloadKeys.isEmpty() ? text : QStringLiteral("⚠ ") + text;
    }
    case Group: return r.group;
    case Tags: return r.tags.join(QStringLiteral(", "));
    case Note: return r.note.section(QLatin1Char('\n'), 0, 0);  // the first line; the tooltip has all
  }
  return {};
}

QVariant RunsModel::data(const QModelIndex& index, int role) const {
  const RunData* r = runAt(index.row());
  if (!r) return {};
  auto it = m_summaries.find(r->id);
  static const RunSummary empty;
  const RunSummary& s = it == m_summaries.end() ? empty : it->second;
  switch (role) {
    case Qt::DisplayRole: return display(*r, s, index.column());
    case Qt::EditRole:
      if (index.column() == Tags) return r->tags.join(QStringLiteral(", "));
      if (index.column() == Note) return r->note;
      if (index.column() == Name) return r->name;
      break;
    case Qt::DecorationRole:
      if (index.column() == Name) return r->color;
      break;
    case Qt::CheckStateRole:
      if (index.column() == Name) return r->visible ? Qt::Checked : Qt::Unchecked;
      break;
    case Qt::ForegroundRole:
      if (index.column() == Status) {
        // Both ended the run against the user's will: red, the detail in the tooltip.
        if (r->status == RunStatus::Failed || r->status == RunStatus::Diverged) return QBrush(errorColor());
      }
      if ((index.column() == SpeedUp || index.column() == MemoryRatio) && !baselineOf(*r).workloadKeys.isEmpty())
        return QBrush(warningColor());
      // Too noisy to conclude: the figure stays, in the warning colour, its reason in the tooltip.
      if (index.column() == SpeedUp && speedOf(*r).noisy() && speedOf(*r).ratio > 0) return QBrush(warningColor());
      if (index.column() == Skipped && s.skippedSteps > 0) return QBrush(warningColor());
      break;
    case Qt::FontRole:
      if (r->archived) {  // set aside: shown (while archived runs are listed) but set apart
        QFont f;
        f.setItalic(true);
        return f;
      }
      if (r->id == baselineOf(*r).id && (index.column() == SpeedUp || index.column() == MemoryRatio)) {
        QFont f;
        f.setItalic(true);
        return f;
      }
      break;
    case Qt::TextAlignmentRole:
      if (index.column() >= Progress && index.column() <= MemoryRatio)
        return int(Qt::AlignRight | Qt::AlignVCenter);
      break;
    case Qt::ToolTipRole:
      if (index.column() == Status && r->archived)
        return tr("Archived: in no chart. “Restore” puts it back in the charts.");
      if (index.column() == Status && !r->statusDetail.isEmpty()) return r->statusDetail;
      if (index.column() == Settings) return settingsText(r->config);
      if (index.column() == Mode && !r->computePath.isEmpty())
        return tr("GEMMs and convolutions in %1").arg(r->computePath);
      if (index.column() == Name) {
        QString tip = QStringLiteral("<b>%1</b><br>%2").arg(r->name.toHtmlEscaped(), settingsText(r->config));
        if (!r->backendInfo.isEmpty()) tip += QStringLiteral("<br><small>%1</small>").arg(r->backendInfo.toHtmlEscaped());
        if (!r->modelSummary.isEmpty())
          tip += QStringLiteral("<pre>%1</pre>").arg(r->modelSummary.join(QLatin1Char('\n')).toHtmlEscaped());
        return tip;
      }
      if (index.column() == SpeedUp || index.column() == MemoryRatio || index.column() == PeakActivations ||
          index.column() == Checkpoint || index.column() == WeightsFile)
        return ratioToolTip(*r, index.column());
      if (index.column() == Note && !r->note.isEmpty()) return r->note;
      if (index.column() == Group && !r->group.isEmpty()) return tr("Started together: %1").arg(r->group);
      break;
  }
  return {};
}

bool RunsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  RunData* r = runAt(index.row());
  if (!r) return false;
  if (index.column() == Name && role == Qt::CheckStateRole) {
    r->visible = value.toInt() == Qt::Checked;
    emit dataChanged(index, index, {Qt::CheckStateRole});
    emit visibilityChanged(r->id, r->visible);
    return true;
  }
  if (role != Qt::EditRole) return false;
  if (index.column() == Tags) {
    // "demo, keep ," -> {"demo", "keep"}: commas separate, blanks around a tag do not count.
    QStringList tags;
    for (const QString& t : value.toString().split(QLatin1Char(',')))
      if (const QString tag = t.trimmed(); !tag.isEmpty() && !tags.contains(tag)) tags << tag;
    r->tags = tags;
  } else if (index.column() == Note) {
    r->note = value.toString().trimmed();
  } else if (index.column() == Name) {
    // Renamed (double-click): the charts' legends, the result panel and saved files follow.
    const QString name = value.toString().simplified();
    if (name.isEmpty() || name == r->name) return false;
    r->name = name;
    emit dataChanged(index, index);
    emit runRenamed(r->id);
    return true;
  } else {
    return false;
  }
  emit dataChanged(index, index);
  return true;
}

QVariant RunsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  static const char* names[ColumnCount] = {"Run", "Mode", "Group", "Status", "Step", "Loss", "Test acc",
                                           "Skipped", "Lost upd.", "ms/step", "s/epoch", "Peak mem",
                                           "Activations", "Checkpoint", "Weights file", "Speed-up",
                                           "Memory ratio", "Tags", "Note", "Settings"};
  if (role == Qt::DisplayRole) return tr(names[section]);
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Name: return tr("Tick to overlay the run in every chart; double-click the name to rename the run");
      case FinalLoss: return tr("Mean training loss of the last 10 steps");
      case TestAcc: return tr("Accuracy on the test set at the last evaluation");
      case Skipped: return tr("Optimizer steps the loss scaler skipped (non-finite gradients)");
      case LostUpdates:
        return tr("Lost-update meter: share of weight updates smaller than half an ulp of their "
                  "weight, so rounding threw them away (mean over the run). fp32 loses some too (an "
                  "update below about 2^-24 of its weight); AMP runs update fp32 masters, so theirs "
                  "is fp32's; pure fp16 weights lose far more");
      case MsPerStep: return tr("Median training step time (after 3 warm-up steps)");
      case PeakMemory: return tr("Peak bytes the backend held (weights, gradients, activations, state)");
      case EpochTime: return tr("Median training time of a whole epoch, in seconds (evaluation excluded)");
      case PeakActivations:
        return tr("Peak bytes of activations kept for backward (16 bits under AMP), and the ratio to "
                  "the baseline's");
      case Checkpoint:
        return tr("Size of the run's resumable checkpoint at its end (fp32 master weights, optimizer "
                  "state, metrics): about as large under AMP as in fp32");
      case WeightsFile:
        return tr("Size of the weights alone in the run's compute dtype, as File > Export weights and "
                  "ampstudio-cli export --weights write them: half of fp32's for a 16-bit run");
      case SpeedUp:
        return tr("Baseline ms/step ÷ this run's (higher is faster): round by round for runs that trained in "
                  "turns (a lesson's), else the medians'. The baseline is the fp32 run of the run's own group "
                  "unless one is chosen above; ⚠: another model, data set or batch size; \"~1.3× (noisy)\": "
                  "the step times are too noisy to conclude (the cell's tooltip says why)");
      case MemoryRatio:
        return tr("This run's peak memory (the Peak mem column) ÷ the baseline's (lower is leaner)");
      case Group: return tr("Runs started together (a lesson, twin runs); right-click to select the group");
      case Tags: return tr("Your labels, separated by commas (double-click to edit); the filter finds them");
      case Note: return tr("Your note on the run (double-click to edit)");
      default: break;
    }
  }
  return {};
}

Qt::ItemFlags RunsModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.column() == Name) f |= Qt::ItemIsUserCheckable;
  if (index.column() == Tags || index.column() == Note || index.column() == Name) f |= Qt::ItemIsEditable;
  return f;
}

}  // namespace amp::ui
