// The UI's record of one run: its config, every step's scalars as column arrays (append-only,
// so charts can decimate without copying), histogram frames, events and status. Lives in the
// GUI thread; the training worker's metrics reach it through a drained buffer.
#pragma once

#include <QColor>
#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QVector>
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "engine/amp/op_trace.h"
#include "engine/config/run_config.h"
#include "engine/io/run_record.h"
#include "engine/train/decision_map.h"
#include "engine/train/run_summary.h"
#include "engine/train/step_metrics.h"

namespace amp::ui {

enum class RunStatus { Queued, Running, Paused, Finished, Stopped, Diverged, Failed };
QString runStatusName(RunStatus s);
// Queued, running or paused: the run has not ended (its figures can still change).
inline bool isActive(RunStatus s) { return s == RunStatus::Running || s == RunStatus::Paused || s == RunStatus::Queued; }

struct RunSeries {
  QVector<double> step, loss, scale, growthTracker, gradNorm, lr, stepMs, samplesPerS,
      lostUpdateFrac;
  // Alternative x axes: the step's epoch (fractional: epoch + position within it) and the
  // training time in seconds up to the end of the step (sum of step times, evaluation excluded).
  QVector<double> epoch, wallS;
  QVector<double> skippedStep, skippedScale;  // steps whose update was skipped, and the scale used
  QVector<double> testStep, testLoss, testAcc;
  std::array<QVector<double>, kMemCategoryCount> memCurrent;  // bytes after each step
  std::array<QVector<double>, kMemCategoryCount> memPeak;     // peak bytes within each step
  // The device's total and free bytes after the latest step (GPU runs; 0 on the CPU).
  double deviceTotal = 0, deviceFree = 0;
  int size() const { return step.size(); }
};

struct HistogramFrame {
  std::int64_t step = 0;
  float scale = 1;  // loss scale the gradients carried
  std::vector<HistogramRecord> records;
};

struct RunData {
  int id = 0;
  QString name;
  QColor color;
  RunConfig config;
  RunStatus status = RunStatus::Queued;
  QString statusDetail;     // divergence text, failure message
  QString backendName;      // the backend the run trains on: "cpu", "cuda:0"
  QString backendInfo;      // what runs natively and what is emulated
  QString computePath;      // this run's dtype and how it computes here: "bf16 emulated (...)"
  // A run recorded outside AMP Studio: summary.json's "source" (the PyTorch probe, a TensorBoard
  // import) and "imported_scalars" (TensorBoard tags no chart shows), kept for saving it again.
  QJsonObject external;
  // What such a run's log did not have ("samples_per_s", "step_ms", "memory", "loss_scale", in
  // source.not_logged): its charts say "not logged" instead of drawing zeros as if measured.
  bool notLogged(const QString& what) const {
    return external.value(QStringLiteral("source")).toObject().value(QStringLiteral("not_logged")).toArray().contains(what);
  }
  QStringList modelSummary; // one line per layer, from Trainer::modelSummary()
  std::int64_t totalSteps = 0;
  std::int64_t batchesPerEpoch = 0;  // known once the run started (0: unknown, loaded runs)
  std::optional<bool> hasTestSet;    // known once the run started (none: not yet, loaded runs)
  bool visible = true;      // ticked in the run table: overlaid in the charts
  // Set aside (a new lesson's clean slate, "Archive finished"): in no chart, listed in the runs
  // table only while it shows archived runs, and restored from there. Unlike removal, undoable.
  bool archived = false;
  // Runs started together (a lesson's variants, twin runs) share a group: the group's fp32
  // member is their baseline, and the charts and tables can show the group together.
  QString group;
  // Runs that trained in turns (engine/train/speed_turns.h: a lesson's variants in the app)
  // share a turnSet (the first one's run id) and the block of steps each turn took; their step
  // times are compared round by round. 0: this run took no turns (loaded runs among them).
  int turnSet = 0;
  int turnBlockSteps = 0;
  QStringList tags;         // the user's labels, for filtering the runs table
  QString note;             // the user's free-text note on the run
  RunSeries series;
  std::vector<HistogramFrame> histograms;
  // The latest decision regions (2-D classification data, while it trains and at its end; not
  // saved in files): the "Data" chart draws them under the training points.
  std::shared_ptr<const DecisionMap> decisionMap;
  QStringList events;
  std::vector<OpTraceEntry> trace;  // latest per-op dtype trace
  std::int64_t traceStep = 0;       // the step `trace` was recorded in
  RunSummaryBuilder summary;
  std::vector<StepMetrics> steps;  // every step as reported, histograms cleared (for saving)
  QString checkpointPath;          // the latest checkpoint written for this run, "" if none
  // Model files at the run's end (engine/io/model_files.h; 0 = not measured): the resumable
  // checkpoint, and the weights alone in the compute dtype (what export --weights writes).
  std::int64_t checkpointBytes = 0;
  std::int64_t weightsBytes = 0;
  QString weightsDtype;
  // A language model's text at the end of the run, as one printable line (newlines as ⏎);
  // empty for other models.
  QString textSample;

  // Appends one step (GUI thread).
  void append(const StepMetrics& m);
  // Fills a fresh record from a saved run (experiment file, bundle, CLI folder): name, config,
  // status, every step, histogram frames with the scale their step used, events, checkpoint.
  // Identity (id, colour, visibility) stays the caller's.
  void loadRecord(const RunRecord& r);
};

}  // namespace amp::ui
