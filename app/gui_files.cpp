#include "app/gui_files.h"

#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QSet>
#include <QMessageBox>
#include <QStatusBar>
#include <QTemporaryDir>
#include <map>

#include "app/gui_run_controller.h"
#include "engine/core/checked_file.h"
#include "engine/io/checkpoint.h"
#include "engine/io/experiment_file.h"
#include "engine/io/metrics_export.h"
#include "engine/io/run_bundle.h"
#include "engine/io/run_output.h"
#include "engine/io/run_record.h"
#include "engine/io/tensorboard_export.h"
#include "engine/io/weights_export.h"
#include "engine/train/run_summary.h"
#include "ui/charts/dashboard.h"
#include "ui/charts/loss_chart.h"
#include "ui/last_folder.h"
#include "ui/main_window.h"
#include "ui/runs_model.h"
#include "ui/runs_panel.h"

namespace amp::gui {

namespace {

QString statusText(ui::RunStatus s) {
  // run_record.h's spelling; a run still training is saved as "running".
  return s == ui::RunStatus::Paused || s == ui::RunStatus::Queued ? QStringLiteral("running")
                                                                  : ui::runStatusName(s);
}

// Atomic and checked (OutputError names the file and the system's reason): a failed export
// never leaves half a file, nor an empty one on a full disk.
void writeFile(const QString& path, const QByteArray& bytes) { writeFileAtomically(path, bytes); }

QByteArray readCheckpointBytes(const ui::RunData& r) {
  if (r.checkpointPath.isEmpty()) return {};
  return readFileBytes(r.checkpointPath);  // a regular file, capped (RunRecordError otherwise)
}

}  // namespace

RunRecord runRecordFromRunData(const ui::RunData& run) {
  RunRecord rec;
  rec.config = run.config;
  rec.name = run.name;
  rec.status = statusText(run.status);
  rec.group = run.group;
  rec.tags = run.tags;
  rec.note = run.note;
  rec.steps = run.steps;
  for (const ui::HistogramFrame& f : run.histograms)
    for (const HistogramRecord& h : f.records) rec.histograms.emplace_back(f.step, h);
  rec.events = run.events;
  // The run's results, as ampstudio-cli's summary.json gives them (final loss, accuracy, steps,
  // skipped steps, speed, memory): a bundle held only the model files' sizes (issue 25).
  RunSummaryBuilder results;
  for (const StepMetrics& m : rec.steps) results.add(m);
  RunSummary summary = results.summary();
  summary.status = statusText(run.status).toStdString();
  summary.checkpointBytes = run.checkpointBytes;
  summary.weightsBytes = run.weightsBytes;
  summary.weightsDtype = run.weightsDtype.toStdString();
  rec.summary = runSummaryToJson(summary);
  // How it computed where it trained ("fp16 emulated (...)"): the table says so after reopening.
  if (!run.computePath.isEmpty()) rec.summary["compute_path"] = run.computePath;
  for (auto it = run.external.begin(); it != run.external.end(); ++it) rec.summary[it.key()] = it.value();
  return rec;  // the checkpoint travels as bytes (ExperimentRun::checkpointZip), not as a path
}

GuiFiles::GuiFiles(ui::MainWindow* window, RunController* controller, QObject* parent)
    : QObject(parent), m_window(window), m_controller(controller) {
  const ui::MainActions& a = window->actions();
  connect(a.saveExperiment, &QAction::triggered, this, &GuiFiles::saveExperimentInteractively);
  connect(a.openExperiment, &QAction::triggered, this, &GuiFiles::openRunsInteractively);
  connect(a.exportMetrics, &QAction::triggered, this, &GuiFiles::exportMetricsInteractively);
  connect(a.exportTensorBoard, &QAction::triggered, this, &GuiFiles::exportTensorBoardInteractively);
  connect(a.exportBundle, &QAction::triggered, this, &GuiFiles::exportRunBundleInteractively);
  connect(a.exportWeights, &QAction::triggered, this, &GuiFiles::exportWeightsInteractively);
  connect(a.saveCheckpoint, &QAction::triggered, this, &GuiFiles::saveCheckpointInteractively);
  connect(a.resumeCheckpoint, &QAction::triggered, this, &GuiFiles::resumeInteractively);
  connect(controller, &RunController::checkpointSaved, this,
          [this](const ui::RunData* run, const QString& path, bool ok, const QString& message,
                 bool periodic) {
            if (ok) {
              m_window->statusBar()->showMessage(tr("Checkpoint of %1 saved to %2").arg(run->name, path), 5000);
            } else if (!periodic || !m_warnedPeriodic.contains(run->id)) {
              // checkpoint.every would otherwise raise a dialog every N steps; after the first,
              // failures go to the run's event log (and the status bar) only.
              if (periodic) m_warnedPeriodic.insert(run->id);
              showError(tr("Could not save a checkpoint of %1").arg(run->name),
                        periodic ? message + tr("\n\nLater periodic checkpoints of this run that fail are "
                                                "listed in its event log.")
                                 : message);
            } else {
              m_window->statusBar()->showMessage(tr("Checkpoint of %1 failed: %2").arg(run->name, message), 5000);
            }
          });
}

void GuiFiles::saveExperimentFile(const QString& path) const {
  std::vector<ExperimentRun> out;
  for (const ui::RunData* r : m_controller->runs()) {
    ExperimentRun e;
    e.record = runRecordFromRunData(*r);
    e.color = r->color.name();
    e.visible = r->visible;
    e.archived = r->archived;
    e.checkpointZip = readCheckpointBytes(*r);
    out.push_back(std::move(e));
  }
  saveExperiment(path, out);
}

// `name`, or where the session already has a run of that name, the name with the folder (or
// file) it came from, its precision, or both; a number as the last resort.
static QString uniqueRunName(const QString& name, const QString& source, const RunConfig& config,
                             const QSet<QString>& taken) {
  if (!taken.contains(name)) return name;
  const QString mode = QString::fromStdString(std::string(precisionModeName(config.mode)));
  QStringList candidates;
  if (!source.isEmpty() && !name.contains(source)) candidates << QStringLiteral("%1 · %2").arg(name, source);
  if (!name.endsWith(mode)) candidates << QStringLiteral("%1 · %2").arg(name, mode);
  if (candidates.size() == 2) candidates << QStringLiteral("%1 · %2 · %3").arg(name, source, mode);
  for (const QString& c : std::as_const(candidates))
    if (!taken.contains(c)) return c;
  const QString base = candidates.isEmpty() ? name : candidates.first();
  for (int i = 2;; ++i)
    if (const QString c = QStringLiteral("%1 #%2").arg(base).arg(i); !taken.contains(c)) return c;
}

int GuiFiles::openRuns(const QString& path) {
  // openAnything reads and checks everything before returning: on error nothing is added.
  std::vector<ExperimentRun> runs = openAnything(path);
  // Two CLI folders of one preset both held a run called "overflow" (or "recipe/fp16"): in the
  // runs table, the charts' legends ("#1", "#2") and the compare dialog nobody could tell which
  // was which. A name already in the session gets its folder's name, or its precision.
  QSet<QString> taken;
  for (const ui::RunData* r : m_controller->runs()) taken.insert(r->name);
  const QFileInfo fi(path);
  const QString source = fi.isDir() ? QDir(fi.absoluteFilePath()).dirName() : fi.completeBaseName();
  for (ExperimentRun& r : runs) {
    r.record.name = uniqueRunName(r.record.name, source, r.record.config, taken);
    taken.insert(r.record.name);
  }
  for (const ExperimentRun& r : runs) m_controller->addLoadedRun(r);
  return int(runs.size());
}

std::vector<RunRecord> GuiFiles::shownRecords() const {
  std::vector<RunRecord> records;
  for (const ui::RunData* r : m_controller->runs())
    if (r->visible && !r->archived) records.push_back(runRecordFromRunData(*r));  // what the charts show
  return records;
}

void GuiFiles::exportMetrics(const QString& path) const {
  const std::vector<RunRecord> records = shownRecords();
  std::vector<const RunRecord*> ptrs;
  for (const RunRecord& r : records) ptrs.push_back(&r);
  const double smoothing = m_window->dashboard()->lossChart()->smoothing();
  const bool json = QFileInfo(path).suffix().compare(QStringLiteral("json"), Qt::CaseInsensitive) == 0;
  writeFile(path, json ? metricsToJson(ptrs, smoothing).toJson() : metricsToCsv(ptrs, smoothing));
}

QStringList GuiFiles::exportTensorBoard(const QString& dir) const {
  const std::vector<RunRecord> records = shownRecords();
  std::vector<const RunRecord*> ptrs;
  for (const RunRecord& r : records) ptrs.push_back(&r);
  QStringList files;
  for (const QString& f : writeTensorBoardFolder(ptrs, dir)) files << f;
  return files;
}

void GuiFiles::exportRunBundle(int runId, const QString& path) const {
  const ui::RunData* run = m_controller->run(runId);
  if (!run) throw std::runtime_error(tr("no run selected").toStdString());
  QTemporaryDir tmp;
  if (!tmp.isValid()) throw std::runtime_error(tr("no temporary folder: %1").arg(tmp.errorString()).toStdString());
  std::map<QString, QByteArray> charts;
  ui::Dashboard* d = m_window->dashboard();
  for (const QString& name : d->chartNames())
    for (const char* ext : {"png", "svg"}) {
      const QString file = QStringLiteral("%1.%2").arg(name, QLatin1String(ext));
      const QString p = tmp.filePath(file);
      // The chart's on-screen size may be empty while hidden: give it a sensible one.
      if (!d->exportChart(name, p, QString::fromLatin1(ext), QSize(900, 500)))
        throw std::runtime_error(tr("could not render the %1 chart").arg(name).toStdString());
      QFile f(p);
      if (!f.open(QIODevice::ReadOnly)) throw std::runtime_error(tr("%1: %2").arg(p, f.errorString()).toStdString());
      charts[file] = f.readAll();
    }
  writeRunBundle(path, runRecordFromRunData(*run), charts, readCheckpointBytes(*run));
}

bool GuiFiles::saveCheckpointNow(int runId, const QString& path) {
  return m_controller->requestCheckpoint(runId, path);
}

int GuiFiles::resumeFromCheckpoint(const QString& path) {
  return m_controller->enqueueResume(path)->id;
}

void GuiFiles::showError(const QString& what, const QString& message) {
  m_window->statusBar()->showMessage(QStringLiteral("%1: %2").arg(what, message), 8000);
  QMessageBox::warning(m_window, tr("AMP Studio"), QStringLiteral("%1:\n%2").arg(what, message));
}

int GuiFiles::selectedRunId() const { return m_window->runsPanel()->selectedRunId(); }

bool GuiFiles::saveExperimentInteractively() {
  QString path = QFileDialog::getSaveFileName(m_window, tr("Save experiment"), ui::inLastFolder(QStringLiteral("experiment.ampx")),
                                              tr("AMP Studio experiments (*.ampx)"));
  if (path.isEmpty()) return false;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".ampx");
  ui::rememberFolderOf(path);
  try {
    saveExperimentFile(path);
    m_window->addRecentFile(path);  // File > Open recent reopens it
    m_window->statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
    m_window->markRunsSaved();
    return true;
  } catch (const std::exception& e) {
    showError(tr("Could not save %1").arg(path), QString::fromUtf8(e.what()));
    return false;
  }
}

void GuiFiles::openRunsInteractively() {
  // One dialog for all three: files (.ampx, bundle .zip) and folders (CLI output).
  QFileDialog dlg(m_window, tr("Open experiment, run bundle or run folder"));
  dlg.setNameFilters({tr("Experiments and run bundles (*.ampx *.amprun.zip *.zip)"), tr("All files (*)")});
  dlg.setFileMode(QFileDialog::ExistingFile);
  dlg.setOption(QFileDialog::DontUseNativeDialog);  // native dialogs cannot switch modes (below)
  dlg.setAcceptMode(QFileDialog::AcceptOpen);
  dlg.setDirectory(ui::lastFolder());
  QString path;
  connect(&dlg, &QFileDialog::currentChanged, &dlg, [&dlg](const QString& p) {
    // A CLI run folder is opened by selecting it and pressing Open.
    dlg.setFileMode(QFileInfo(p).isDir() ? QFileDialog::Directory : QFileDialog::ExistingFile);
  });
  if (dlg.exec() != QDialog::Accepted || dlg.selectedFiles().isEmpty()) return;
  path = dlg.selectedFiles().first();
  ui::rememberFolderOf(path);
  if (openRunsReporting(path)) m_window->addRecentFile(path);  // File > Open recent reopens it
}

bool GuiFiles::openRunsReporting(const QString& path) {
  try {
    const int n = openRuns(path);
    m_window->statusBar()->showMessage(n == 1 ? tr("Opened 1 run from %1").arg(path)
                                              : tr("Opened %1 runs from %2").arg(n).arg(path),
                                       5000);
    return true;
  } catch (const std::exception& e) {
    showError(tr("Could not open %1").arg(path), QString::fromUtf8(e.what()));
    return false;
  }
}

void GuiFiles::exportMetricsInteractively() {
  QString path = QFileDialog::getSaveFileName(m_window, tr("Export metrics of the ticked runs"),
                                              ui::inLastFolder(QStringLiteral("metrics.csv")),
                                              tr("CSV table (*.csv);;JSON (*.json)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".csv");
  ui::rememberFolderOf(path);
  try {
    exportMetrics(path);
    m_window->statusBar()->showMessage(tr("Metrics saved to %1").arg(path), 5000);
  } catch (const std::exception& e) {
    showError(tr("Could not export metrics to %1").arg(path), QString::fromUtf8(e.what()));
  }
}

void GuiFiles::exportTensorBoardInteractively() {
  const QString dir = QFileDialog::getExistingDirectory(
      m_window, tr("Export the ticked runs to TensorBoard: choose an empty folder"), ui::lastFolder());
  if (dir.isEmpty()) return;
  ui::rememberFolderOf(dir + "/");
  try {
    const QStringList files = exportTensorBoard(dir);
    m_window->statusBar()->showMessage(
        tr("%n run(s) written as TensorBoard event files: tensorboard --logdir %1", nullptr, int(files.size())).arg(dir),
        8000);
  } catch (const std::exception& e) {
    showError(tr("Could not export to TensorBoard in %1").arg(dir), QString::fromUtf8(e.what()));
  }
}

void GuiFiles::exportRunBundleInteractively() {
  const int id = selectedRunId();
  const ui::RunData* run = m_controller->run(id);
  if (!run) return showError(tr("Export run bundle"), tr("Select a run in the runs table first."));
  // .amprun.zip: a zip any tool opens, and a name the desktop knows as an AMP Studio run bundle
  // (resources/ampstudio-mime.xml), so a file manager opens it with the app.
  QString path = QFileDialog::getSaveFileName(m_window, tr("Export run bundle"),
                                              ui::inLastFolder(QStringLiteral("%1.amprun.zip").arg(run->name)),
                                              tr("AMP Studio run bundles (*.amprun.zip);;Zip (*.zip)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".amprun.zip");
  ui::rememberFolderOf(path);
  try {
    exportRunBundle(id, path);
    m_window->statusBar()->showMessage(tr("Run bundle saved to %1").arg(path), 5000);
  } catch (const std::exception& e) {
    showError(tr("Could not export %1").arg(path), QString::fromUtf8(e.what()));
  }
}

void GuiFiles::exportWeightsInteractively() {
  const int id = selectedRunId();
  const ui::RunData* run = m_controller->run(id);
  const QString title = tr("Export weights");
  if (!run) return showError(title, tr("Select a run in the runs table first."));
  if (run->checkpointPath.isEmpty())
    return showError(title, tr("%1 has no checkpoint to take the weights from: tick \"Checkpoint at end\" "
                               "(Training tab) before starting a run, or save one with Run > Save "
                               "checkpoint now while it trains.").arg(run->name));
  // The run's own compute dtype first: a 16-bit run's weights in its 16-bit type.
  QStringList types{QStringLiteral("fp16"), QStringLiteral("bf16"), QStringLiteral("fp32")};
  const QString own = QString::fromUtf8(dtypeName(run->config.computeDtype()).data());
  types.removeAll(own);
  types.prepend(own);
  bool ok = false;
  const QString dtype = QInputDialog::getItem(m_window, title, tr("Weights of %1 in:").arg(run->name),
                                              types, 0, false, &ok);
  if (!ok) return;
  QString path = QFileDialog::getSaveFileName(m_window, title,
                                              ui::inLastFolder(QStringLiteral("%1-%2.safetensors").arg(run->name, dtype)),
                                              tr("safetensors (*.safetensors)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".safetensors");
  ui::rememberFolderOf(path);
  try {
    const SafetensorsFile model = checkpointModel(run->checkpointPath);
    const DType to = dtype == QLatin1String("fp32") ? DType::F32 : dtype == QLatin1String("bf16") ? DType::BF16 : DType::F16;
    const QByteArray bytes = exportWeights(model.tensors, to, QFileInfo(run->checkpointPath).fileName().toStdString());
    writeFileAtomically(path.toStdString(), std::string_view(bytes.constData(), std::size_t(bytes.size())));
    const ExportRounding r = exportRounding(model.tensors, to);
    QString message = tr("Weights of %1 (%2, %3) saved to %4")
                          .arg(run->name, dtype, ui::RunsModel::formatBytes(double(bytes.size())), path);
    if (r.overflowed > 0) message += tr(" — %1 value(s) beyond %2's range became inf").arg(r.overflowed).arg(dtype);
    m_window->statusBar()->showMessage(message, 8000);
  } catch (const std::exception& e) {
    showError(tr("Could not export %1").arg(path), QString::fromUtf8(e.what()));
  }
}

void GuiFiles::saveCheckpointInteractively() {
  const int id = selectedRunId();
  const ui::RunData* run = m_controller->run(id);
  if (!run) return showError(tr("Save checkpoint"), tr("Select a run in the runs table first."));
  if (run->status != ui::RunStatus::Running && run->status != ui::RunStatus::Paused)
    return showError(tr("Save checkpoint"),
                     tr("%1 has no trainer any more (it has ended or not started); %2")
                         .arg(run->name, run->checkpointPath.isEmpty()
                                             ? tr("it left no checkpoint.")
                                             : tr("its latest checkpoint is %1.").arg(run->checkpointPath)));
  QString path = QFileDialog::getSaveFileName(
      m_window, tr("Save checkpoint"),
      QDir(RunController::checkpointDir(*run)).filePath(checkpointFileName(run->series.size())),
      tr("Checkpoints (*.zip)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".zip");
  if (!saveCheckpointNow(id, path))
    showError(tr("Save checkpoint"), tr("%1 has ended: its trainer is gone.").arg(run->name));
}

void GuiFiles::resumeInteractively() {
  const QString path = QFileDialog::getOpenFileName(m_window, tr("Resume from checkpoint"), ui::lastFolder(),
                                                    tr("Checkpoints (*.zip);;All files (*)"));
  if (path.isEmpty()) return;
  try {
    resumeFromCheckpoint(path);
  } catch (const std::exception& e) {
    showError(tr("Could not resume from %1").arg(path), QString::fromUtf8(e.what()));
  }
}

}  // namespace amp::gui
