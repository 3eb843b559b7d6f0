#include "engine/io/tensorboard_import.h"

#include <QDir>
#include <QDirIterator>
#include <QJsonArray>
#include <QJsonDocument>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include "engine/io/config_json.h"
#include "engine/io/metrics_json.h"
#include "engine/io/proto/tensorboard_event.pb.h"
#include "engine/io/tensorboard_export.h"
#include "engine/io/tensorboard_histogram.h"
#include "engine/io/tensorboard_steps.h"
#include "engine/io/tfevents_records.h"
#include "kernels/common/float16.h"

namespace amp {

namespace {

[[noreturn]] void fail(const std::string& what) { throw RunRecordError(what); }

std::int64_t elementCount(const tb::TensorProto& t) {
  std::int64_t n = 1;
  for (const auto& d : t.tensor_shape().dim()) n *= std::max<std::int64_t>(0, d.size());
  return n;
}

// The i-th element of a numeric tensor, from its typed list or its raw little-endian bytes.
std::optional<double> tensorElement(const tb::TensorProto& t, int i) {
  const std::string& raw = t.tensor_content();
  auto fromRaw = [&](std::size_t width) -> std::optional<std::uint64_t> {
    if (raw.size() < (std::size_t(i) + 1) * width) return std::nullopt;
    std::uint64_t bits = 0;
    std::memcpy(&bits, raw.data() + std::size_t(i) * width, width);
    return bits;
  };
  switch (t.dtype()) {
    case tb::DT_FLOAT:
      if (i < t.float_val_size()) return t.float_val(i);
      if (auto b = fromRaw(4)) return bitsToFloat(static_cast<std::uint32_t>(*b));
      return std::nullopt;
    case tb::DT_DOUBLE:
      if (i < t.double_val_size()) return t.double_val(i);
      if (auto b = fromRaw(8)) {
        double d;
        std::memcpy(&d, &*b, 8);
        return d;
      }
      return std::nullopt;
    case tb::DT_HALF:
      if (i < t.half_val_size()) return halfBitsToFloat(static_cast<std::uint16_t>(t.half_val(i)));
      if (auto b = fromRaw(2)) return halfBitsToFloat(static_cast<std::uint16_t>(*b));
      return std::nullopt;
    case tb::DT_BFLOAT16:
      if (i < t.half_val_size()) return bf16BitsToFloat(static_cast<std::uint16_t>(t.half_val(i)));
      if (auto b = fromRaw(2)) return bf16BitsToFloat(static_cast<std::uint16_t>(*b));
      return std::nullopt;
    case tb::DT_INT32:
      if (i < t.int_val_size()) return t.int_val(i);
      return std::nullopt;
    case tb::DT_INT64:
      if (i < t.int64_val_size()) return static_cast<double>(t.int64_val(i));
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<double> scalarOf(const tb::Summary::Value& v) {
  if (v.value_case() == tb::Summary::Value::kSimpleValue) return v.simple_value();
  if (v.value_case() == tb::Summary::Value::kTensor && elementCount(v.tensor()) == 1)
    return tensorElement(v.tensor(), 0);
  return std::nullopt;
}

std::optional<std::string> stringOf(const tb::Summary::Value& v) {
  if (v.value_case() != tb::Summary::Value::kTensor) return std::nullopt;
  const tb::TensorProto& t = v.tensor();
  if (t.dtype() != tb::DT_STRING || t.string_val_size() != 1) return std::nullopt;
  return t.string_val(0);
}

QJsonObject jsonObjectOf(const std::string& text, const std::string& where) {
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(text), &err);
  if (err.error != QJsonParseError::NoError || !doc.isObject())
    fail(where + ": not a JSON object (" + err.errorString().toStdString() + ")");
  return doc.object();
}

// What the events of one run said, before it becomes a RunRecord.
struct Collected {
  TbScalars scalars;                                      // known tags, by step
  std::vector<StepMetrics> exact;                         // ampstudio/metrics lines
  std::vector<std::pair<std::int64_t, HistogramRecord>> exactHistograms, foreignHistograms;
  int approximateBuckets = 0;                             // of the foreign histograms
  std::int64_t zeroBucketValues = 0;
  std::optional<QJsonObject> config, summary;
  std::optional<QString> events;
  std::map<std::string, QJsonArray> unknown;              // tag -> [[step, value], ...]
  std::map<std::string, QJsonArray> texts;                // add_text: tag -> [[step, text], ...]
  std::set<std::string> other;                            // images, audio, hparams...: no values kept
  QStringList warnings;
};

void collectValue(Collected& c, const tb::Summary::Value& v, std::int64_t step, double wall, const std::string& where) {
  const std::string& tag = v.tag();
  const std::string at = where + ": tag '" + tag + "'";
  try {
    if (tag == tbtag::kMetrics) {
      if (auto s = stringOf(v)) return c.exact.push_back(stepMetricsFromJson(jsonObjectOf(*s, at)));
    } else if (tag.rfind(tbtag::kHistogramPrefix, 0) == 0) {
      if (auto s = stringOf(v)) {
        const QJsonObject o = jsonObjectOf(*s, at);
        return void(c.exactHistograms.emplace_back(o["step"].toInteger(step), histogramFromJson(o)));
      }
    } else if (tag == tbtag::kConfig) {
      if (auto s = stringOf(v)) return void(c.config = jsonObjectOf(*s, at));
    } else if (tag == tbtag::kSummary) {
      if (auto s = stringOf(v)) return void(c.summary = jsonObjectOf(*s, at));
    } else if (tag == tbtag::kEvents) {
      if (auto s = stringOf(v)) return void(c.events = QString::fromStdString(*s));
    }
  } catch (const RunRecordError& e) {
    fail(at + ": " + e.what());
  }
  if (tag.rfind(tbtag::kExponentsUnscaled, 0) == 0 || tag.rfind(tbtag::kExponentsScaled, 0) == 0)
    return;  // our own exponent views: the ampstudio/histogram lines hold the same counts exactly
  if (auto x = scalarOf(v)) {
    if (auto f = tensorBoardField(tag)) {
      c.scalars.values[step][*f] = *x;
      c.scalars.wallTime.emplace(step, wall);
      return;
    }
    c.unknown[tag].append(QJsonArray{static_cast<double>(step), std::isfinite(*x) ? QJsonValue(*x) : QJsonValue(QString::number(*x))});
    return;
  }
  if (auto b = tensorBoardBuckets(v)) {
    RebinnedHistogram h = rebinTensorBoardHistogram(tag, *b);
    c.approximateBuckets += h.approximateBuckets;
    c.zeroBucketValues += h.zeros;
    return void(c.foreignHistograms.emplace_back(step, std::move(h.record)));
  }
  const std::string plugin = v.metadata().plugin_data().plugin_name();
  if (auto text = stringOf(v); text && (plugin == "text" || plugin.empty()))
    return void(c.texts[tag].append(QJsonArray{static_cast<double>(step), QString::fromStdString(*text)}));
  c.other.insert(plugin.empty() ? tag : tag + " (" + plugin + ")");  // an image, audio, hparams...: listed
}

void collectFile(Collected& c, const QString& name, const std::string& bytes) {
  const std::string file = name.toStdString();
  const tfevents::SplitResult split = [&] {
    try {
      return tfevents::splitRecords(bytes, file);
    } catch (const tfevents::RecordError& e) {
      throw RunRecordError(e.what());
    }
  }();
  if (!split.truncatedTail.empty()) c.warnings << QString::fromStdString(split.truncatedTail);
  for (const tfevents::Record& rec : split.records) {
    const std::string where = file + ": record " + std::to_string(rec.index) + " (offset " + std::to_string(rec.offset) + ")";
    tb::Event e;
    if (!e.ParseFromArray(rec.data.data(), static_cast<int>(rec.data.size())))
      fail(where + ": not a TensorBoard Event message");
    if (e.what_case() == tb::Event::kFileVersion) {
      const std::string& v = e.file_version();
      if (v.rfind("brain.Event:", 0) != 0)
        fail(where + ": file_version '" + v + "' is not a TensorBoard event file's");
      const std::string n = v.substr(12);
      if (n != "1" && n != "2")
        fail(where + ": file_version '" + v + "' is newer than this AMP Studio reads (brain.Event:1 or 2)");
      continue;
    }
    if (e.what_case() != tb::Event::kSummary) continue;  // graphs, session logs: nothing to chart
    for (const tb::Summary::Value& v : e.summary().value()) collectValue(c, v, e.step(), e.wall_time(), where);
  }
}

RunConfig externalConfig(const QString& runName, bool scaled, std::int64_t steps) {
  RunConfig cfg;
  cfg.name = runName.toStdString();
  cfg.model.name = "external";
  cfg.data.name = "external";
  // TensorBoard logs do not say the precision; a loss scale other than 1 means fp16 with
  // GradScaler (a scale of 1 throughout is a disabled scaler: bf16 or fp32, the log cannot say).
  cfg.mode = scaled ? PrecisionMode::AmpFp16 : PrecisionMode::Fp32;
  cfg.scalerEnabled = scaled ? "true" : "false";
  cfg.train.steps = std::max<std::int64_t>(1, steps);
  cfg.train.histogramEvery = 0;
  return cfg;
}

// A run's files read, or nullopt (and why) when they hold no training step: the folder
// add_hparams writes beside the run, a folder of evaluations alone.
struct Loaded {
  std::optional<RunRecord> run;
  QString notARun;
};

Loaded loadRun(const std::map<QString, std::string>& files, const QString& where, const QString& runName) {
  Collected c;
  for (const auto& [name, bytes] : files) collectFile(c, where + name, bytes);
  RunRecord r;
  r.warnings = c.warnings;
  if (c.config) {
    try {
      applyConfigJson(r.config, *c.config);
    } catch (const ConfigError& e) {
      fail((where + "(" + tbtag::kConfig + "): ").toStdString() + e.what());
    }
  }
  const bool ours = !c.exact.empty();
  TbSteps fromTags;
  if (ours) {
    std::sort(c.exact.begin(), c.exact.end(), [](const StepMetrics& a, const StepMetrics& b) { return a.step < b.step; });
    r.steps = std::move(c.exact);
  } else {
    fromTags = tensorBoardSteps(c.scalars);
    r.steps = std::move(fromTags.steps);
    for (const QString& w : fromTags.warnings) {
      r.warnings << where + ": " + w;
      r.events << w;
    }
  }
  if (r.steps.empty()) {
    QStringList tags;
    for (const auto& [tag, values] : c.unknown) tags << QString::fromStdString(tag);
    for (const auto& t : c.other) tags << QString::fromStdString(t);
    return {std::nullopt, QStringLiteral("%1: no training loss or other scalar of a training step%2").arg(where,
        tags.isEmpty() ? QString() : QStringLiteral(" (its tags: %1)").arg(tags.join(", ")))};
  }
  if (!c.config) {
    r.config = externalConfig(runName, fromTags.scaleAboveOne, r.steps.back().step);
    r.warnings << QStringLiteral("%1: precision not in the log: shown as %2").arg(where,
        fromTags.scaleAboveOne ? QStringLiteral("fp16 (a loss scale other than 1 was logged)")
        : fromTags.scaleLogged ? QStringLiteral("fp32 (the loss scale is 1 throughout: no GradScaler at work, bf16 or fp32)")
                               : QStringLiteral("fp32 (no loss scale was logged)"));
  }
  r.histograms = std::move(c.exactHistograms);
  for (auto& h : c.foreignHistograms) r.histograms.push_back(std::move(h));
  if (c.summary) r.summary = *c.summary;
  r.name = r.summary.contains("name") ? r.summary["name"].toString() : runName;
  r.status = r.summary.contains("status") ? r.summary["status"].toString() : QStringLiteral("finished");
  if (c.events) r.events = c.events->split('\n', Qt::SkipEmptyParts) + r.events;
  if (!ours) {
    // What the log did not have: the app says "not logged" instead of drawing zeros.
    QJsonArray notLogged;
    if (!fromTags.throughput) notLogged.append(QStringLiteral("samples_per_s"));
    if (!fromTags.stepTime) notLogged.append(QStringLiteral("step_ms"));
    notLogged.append(QStringLiteral("memory"));
    if (!fromTags.scaleLogged) notLogged.append(QStringLiteral("loss_scale"));
    r.summary["source"] = QJsonObject{{"kind", "tensorboard"}, {"folder", where}, {"not_logged", notLogged}};
    r.events << QStringLiteral("imported from TensorBoard logs in %1").arg(where);
    if (!c.foreignHistograms.empty()) {
      QString line = QStringLiteral("%1 histograms re-binned by binary exponent from TensorBoard's value buckets")
                         .arg(c.foreignHistograms.size());
      line += c.approximateBuckets
                  ? QStringLiteral(": approximate, %1 buckets spanned a power of two (or zero) and were split by their width on a log axis")
                        .arg(c.approximateBuckets)
                  : QStringLiteral(": exact, every bucket within one binade");
      if (c.zeroBucketValues)
        line += QStringLiteral("; %1 values in the [0, 1e-12) bucket counted as zeros").arg(c.zeroBucketValues);
      r.events << line;
    }
  }
  if (!c.unknown.empty() || !c.other.empty()) {
    QStringList tags;
    QJsonObject kept;
    for (const auto& [tag, values] : c.unknown) {
      tags << QString::fromStdString(tag);
      kept[QString::fromStdString(tag)] = values;
    }
    for (const auto& t : c.other) tags << QString::fromStdString(t);
    if (!kept.isEmpty()) r.summary["imported_scalars"] = kept;
    const QString line = QStringLiteral("%1 TensorBoard tags not in AMP Studio's charts (scalars kept in summary.json as imported_scalars): %2")
                             .arg(tags.size()).arg(tags.join(", "));
    r.events << line;
    r.warnings << where + ": " + line;
  }
  if (!c.texts.empty()) {
    QJsonObject texts;
    QStringList tags;
    for (const auto& [tag, values] : c.texts) {
      texts[QString::fromStdString(tag)] = values;
      tags << QString::fromStdString(tag);
    }
    r.summary["imported_text"] = texts;
    r.events << QStringLiteral("text kept in summary.json as imported_text: %1").arg(tags.join(", "));
  }
  return {std::move(r), QString()};
}

// Event files below `dir`, by the folder holding them (relative to dir, "." for dir itself),
// leaving out those for which `skip(folder)` holds.
template <class Skip>
std::map<QString, std::map<QString, std::string>> eventFiles(const QString& dir, Skip skip) {
  std::map<QString, std::map<QString, std::string>> runs;
  // Relative to the absolute folder: QDir("logs").relativeFilePath("logs/x") is "logs/x", which
  // put the folder twice in every message and in summary.json when --run was relative.
  const QDir root(QFileInfo(dir).absoluteFilePath());
  QDirIterator it(root.path(), {QStringLiteral("*tfevents*")}, QDir::Files, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString path = it.next();
    const QString folder = root.relativeFilePath(QFileInfo(path).absolutePath());
    if (skip(folder)) continue;
    runs[folder.isEmpty() ? QStringLiteral(".") : folder][QFileInfo(path).fileName()] = readFileBytes(path).toStdString();
  }
  return runs;
}

template <class Skip>
std::vector<RunRecord> loadTensorBoardRuns(const QString& dir, Skip skip, QStringList* notRuns) {
  const auto runs = eventFiles(dir, skip);
  std::vector<RunRecord> out;
  QStringList skipped;
  for (const auto& [folder, files] : runs) {
    const QString where = QDir::cleanPath(folder == "." ? dir : dir + "/" + folder) + "/";
    const QString name = folder == "." ? QFileInfo(QDir::cleanPath(QFileInfo(dir).absoluteFilePath())).fileName() : folder;
    Loaded l = loadRun(files, where, name);
    if (l.run) out.push_back(std::move(*l.run));
    else skipped << l.notARun;
  }
  if (out.empty() && !skipped.isEmpty()) fail(skipped.first().toStdString());
  // A folder without a training step beside runs that have them: left out, said in each run.
  for (RunRecord& r : out)
    for (const QString& s : skipped) {
      r.warnings << s + ": left out (not a run; add_hparams writes such a folder)";
      r.events << s + ": left out (not a run; add_hparams writes such a folder)";
    }
  if (notRuns) *notRuns = skipped;
  return out;
}

}  // namespace

bool isTensorBoardFolder(const QString& dir) {
  QDirIterator it(dir, {QStringLiteral("*tfevents*")}, QDir::Files, QDirIterator::Subdirectories);
  return it.hasNext();
}

RunRecord tensorBoardRunFromFiles(const std::map<QString, std::string>& files, const QString& where,
                                  const QString& runName) {
  Loaded l = loadRun(files, where, runName);
  if (!l.run) fail(l.notARun.toStdString());
  return std::move(*l.run);
}

std::vector<RunRecord> loadTensorBoardFolder(const QString& dir) {
  auto out = loadTensorBoardRuns(dir, [](const QString&) { return false; }, nullptr);
  if (out.empty()) fail((dir + ": no TensorBoard event files (events.out.tfevents.*)").toStdString());
  return out;
}

std::vector<RunRecord> loadRunsOrTensorBoard(const QString& dir) {
  const QStringList subs = QDir(dir).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
  const bool hasRuns = isRunFolder(dir) || std::any_of(subs.begin(), subs.end(), [&](const QString& s) {
                         return isRunFolder(QDir(dir).filePath(s));
                       });
  if (!hasRuns) return isTensorBoardFolder(dir) ? loadTensorBoardFolder(dir) : loadRunFolders(dir);
  // Runs of ours, and maybe a TensorBoard log beside them (`run --out DIR` next to a
  // SummaryWriter's runs/): both, the event files inside a run folder of ours excepted.
  std::vector<RunRecord> out = loadRunFolders(dir);
  const QDir root(QFileInfo(dir).absoluteFilePath());
  auto insideOurRun = [&](const QString& folder) {
    QString f = folder.isEmpty() ? QStringLiteral(".") : folder;
    for (;;) {
      if (isRunFolder(root.filePath(f))) return true;
      const int slash = f.lastIndexOf('/');
      if (f == ".") return false;
      f = slash < 0 ? QStringLiteral(".") : f.left(slash);
    }
  };
  if (eventFiles(dir, insideOurRun).empty()) return out;
  for (RunRecord& r : loadTensorBoardRuns(dir, insideOurRun, nullptr)) out.push_back(std::move(r));
  return out;
}

}  // namespace amp
