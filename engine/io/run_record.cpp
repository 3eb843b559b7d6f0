#include "engine/io/run_record.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <climits>
#include <cmath>
#include <optional>

#include "engine/core/checked_file.h"

#include "engine/config/config_schema.h"
#include "engine/io/config_json.h"
#include "engine/io/metrics_json.h"

namespace amp {

namespace {

[[noreturn]] void fail(const QString& what) { throw RunRecordError(what.toStdString()); }

// Every dtype histogramToJson() can write: parseDType() does not know "uint8".
std::optional<DType> dtypeFromName(const QString& s) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::U8})
    if (s == QString::fromUtf8(dtypeName(t).data(), static_cast<qsizetype>(dtypeName(t).size()))) return t;
  return std::nullopt;
}

std::optional<HistogramKind> kindFromName(const QString& s) {
  for (HistogramKind k : {HistogramKind::WeightGrad, HistogramKind::ActivationGrad, HistogramKind::Activation,
                          HistogramKind::Weight}) {
    const std::string_view n = histogramKindName(k);
    if (s == QString::fromUtf8(n.data(), static_cast<qsizetype>(n.size()))) return k;
  }
  return std::nullopt;
}

bool isCount(const QJsonValue& v) {
  if (!v.isDouble()) return false;
  const double d = v.toDouble();
  return d >= 0 && d <= 9007199254740992.0 && d == std::floor(d);  // exact in a double
}

ExponentHistogram histogramSide(const QJsonObject& o, const char* countsKey, const char* fractionsKey) {
  const QJsonValue v = o[countsKey];
  if (!v.isArray() || v.toArray().size() != kHistBins)
    fail(QString("\"%1\" must be a list of %2 bin counts").arg(countsKey).arg(kHistBins));
  ExponentHistogram h;
  const QJsonArray a = v.toArray();
  for (int i = 0; i < kHistBins; ++i) {
    if (!isCount(a[i])) fail(QString("\"%1\"[%2] is not a count").arg(countsKey).arg(i));
    h.counts[i] = static_cast<std::int64_t>(a[i].toDouble());
    h.total += h.counts[i];
  }
  // Only the fractions are stored; n / total -> n is exact for any total below 2^52.
  const QJsonObject f = o[fractionsKey].toObject();
  auto back = [&](const char* key) {
    const double x = f[key].toDouble();
    if (!(x >= 0 && x <= 1)) fail(QString("\"%1\".%2 must be a fraction in [0, 1]").arg(fractionsKey, key));
    return static_cast<std::int64_t>(std::llround(x * double(h.total)));
  };
  h.underflow = back("underflow");
  h.subnormal = back("subnormal");
  h.overflow = back("overflow");
  h.nonFinite = back("nonfinite");
  return h;
}

// Calls take(object) for every JSON line. A line that does not parse is an error naming the
// line, except the last one when the file does not end with a newline: JsonLinesWriter writes
// the newline after the object, so that is a run killed while writing its last line.
template <class Take>
void forEachJsonLine(const QByteArray& data, const QString& file, QStringList& warnings, Take take) {
  const QList<QByteArray> lines = data.split('\n');
  for (qsizetype i = 0; i < lines.size(); ++i) {
    const QByteArray line = lines[i].trimmed();
    if (line.isEmpty()) continue;
    const QString at = file + ":" + QString::number(i + 1);
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(line, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject()) {
      if (i == lines.size() - 1) {  // no newline after it
        warnings << at + ": incomplete last line ignored (the run was stopped while writing it)";
        return;
      }
      fail(at + ": not a JSON object" +
           (err.error != QJsonParseError::NoError ? " (" + err.errorString() + " at offset " +
                                                        QString::number(err.offset) + ")"
                                                  : QString()));
    }
    try {
      take(doc.object());
    } catch (const RunRecordError& e) {
      fail(at + ": " + QString::fromStdString(e.what()));
    }
  }
}

std::int64_t stepOf(const QJsonObject& o) {
  if (!isCount(o["step"])) fail("\"step\" is missing or not a non-negative integer");
  return static_cast<std::int64_t>(o["step"].toDouble());
}

QJsonObject jsonObjectFile(const QByteArray& bytes, const QString& file) {
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(bytes, &err);
  if (err.error != QJsonParseError::NoError)
    fail(file + ": not valid JSON at offset " + QString::number(err.offset) + " (" + err.errorString() + ")");
  if (!doc.isObject()) fail(file + ": the top level must be a JSON object");
  return doc.object();
}

RunConfig configFromJson(const QByteArray& bytes, const QString& file) {
  RunConfig c;
  try {
    applyConfigJson(c, jsonObjectFile(bytes, file));
  } catch (const ConfigError& e) {
    fail(file + ": " + QString::fromStdString(e.what()));
  }
  if (auto problem = validateRunConfig(c)) fail(file + ": " + QString::fromStdString(*problem));
  return c;
}

// checkpoints/step-N.zip with the largest N: the state the run ended in.
QString latestCheckpoint(const QString& dir) {
  static const QRegularExpression re(QStringLiteral("^step-(\\d+)\\.zip$"));
  QString best;
  qlonglong bestStep = -1;
  const QDir ckpt(dir + "/checkpoints");
  for (const QString& name : ckpt.entryList(QDir::Files)) {
    const auto m = re.match(name);
    if (m.hasMatch() && m.captured(1).toLongLong() > bestStep) {
      bestStep = m.captured(1).toLongLong();
      best = ckpt.filePath(name);
    }
  }
  return best;
}

// summary.json's optional "group", "tags" and "note" into the record.
void readBookkeeping(RunRecord& r, const QString& file) {
  const QJsonObject& s = r.summary;
  if (s.contains("group") && !s["group"].isString()) fail(file + ": \"group\" must be a string");
  if (s.contains("note") && !s["note"].isString()) fail(file + ": \"note\" must be a string");
  if (s.contains("tags")) {
    if (!s["tags"].isArray()) fail(file + ": \"tags\" must be a list of strings");
    for (const QJsonValue& t : s["tags"].toArray()) {
      if (!t.isString()) fail(file + ": \"tags\" must be a list of strings");
      r.tags << t.toString();
    }
  }
  r.group = s["group"].toString();
  r.note = s["note"].toString();
}

}  // namespace

QByteArray readFileBytes(const QString& path) {
  std::string bytes;
  if (auto problem = readRegularFile(path.toStdString(), kMaxRunFileBytes, bytes))
    fail(QString::fromStdString(*problem));
  return QByteArray::fromStdString(bytes);
}

void writeFileAtomically(const QString& path, const QByteArray& bytes) {
  amp::writeFileAtomically(path.toStdString(), std::string_view(bytes.constData(), bytes.size()));
}

HistogramRecord histogramFromJson(const QJsonObject& o) {
  HistogramRecord h;
  if (!o["tensor"].isString()) fail("\"tensor\" must be a string");
  h.tensor = o["tensor"].toString().toStdString();
  const auto kind = kindFromName(o["kind"].toString());
  if (!kind) fail("unknown histogram kind \"" + o["kind"].toString() + "\"");
  h.kind = *kind;
  const auto dtype = dtypeFromName(o["dtype"].toString());
  if (!dtype) fail("unknown dtype \"" + o["dtype"].toString() + "\"");
  h.dtype = *dtype;
  // Other bin edges would put every count in the wrong bin.
  if (o["min_exp"].toInt(INT_MIN) != kHistMinExp || o["max_exp"].toInt(INT_MIN) != kHistMaxExp)
    fail(QString("bins must span exponents %1..%2 (min_exp, max_exp)").arg(kHistMinExp).arg(kHistMaxExp));
  h.scaled = histogramSide(o, "scaled", "scaled_fractions");
  h.unscaled = histogramSide(o, "unscaled", "unscaled_fractions");
  roundingCountsFromJson(o, h);
  return h;
}

std::map<QString, QByteArray> runRecordFiles(const RunRecord& r) {
  std::map<QString, QByteArray> files;
  files[kRunConfigFile] = QJsonDocument(configToJson(r.config)).toJson();
  QByteArray metrics, histograms, events;
  for (const auto& m : r.steps) metrics += stepMetricsJsonLine(m);
  for (const auto& [step, h] : r.histograms)
    histograms += QJsonDocument(histogramToJson(step, h)).toJson(QJsonDocument::Compact) + '\n';
  for (const auto& e : r.events) events += e.toUtf8() + '\n';
  files[kRunMetricsFile] = metrics;
  files[kRunHistogramsFile] = histograms;
  files[kRunEventsFile] = events;
  QJsonObject summary = r.summary;
  summary["name"] = r.name;
  summary["status"] = r.status;
  // Only when set: the record's own values win over what a loaded summary said.
  summary.remove("group");
  summary.remove("tags");
  summary.remove("note");
  if (!r.group.isEmpty()) summary["group"] = r.group;
  if (!r.tags.isEmpty()) summary["tags"] = QJsonArray::fromStringList(r.tags);
  if (!r.note.isEmpty()) summary["note"] = r.note;
  files[kRunSummaryFile] = QJsonDocument(summary).toJson();
  return files;
}

RunRecord runRecordFromFiles(const std::map<QString, QByteArray>& files, const QString& where) {
  auto file = [&](const char* name) -> const QByteArray* {
    const auto it = files.find(name);
    return it == files.end() ? nullptr : &it->second;
  };
  RunRecord r;
  const QByteArray* config = file(kRunConfigFile);
  if (!config) fail(where + kRunConfigFile + ": missing (not an AMP Studio run?)");
  r.config = configFromJson(*config, where + kRunConfigFile);

  const QByteArray* metrics = file(kRunMetricsFile);
  if (!metrics) fail(where + kRunMetricsFile + ": missing (not an AMP Studio run?)");
  forEachJsonLine(*metrics, where + kRunMetricsFile, r.warnings, [&](const QJsonObject& o) {
    stepOf(o);
    if (!o.contains("loss")) fail("\"loss\" is missing");
    r.steps.push_back(stepMetricsFromJson(o));
  });
  if (const QByteArray* h = file(kRunHistogramsFile))
    forEachJsonLine(*h, where + kRunHistogramsFile, r.warnings,
                    [&](const QJsonObject& o) { r.histograms.emplace_back(stepOf(o), histogramFromJson(o)); });
  if (const QByteArray* e = file(kRunEventsFile))
    for (const QByteArray& line : e->split('\n'))
      if (!line.trimmed().isEmpty()) r.events << QString::fromUtf8(line).remove(QLatin1Char('\r'));

  if (const QByteArray* s = file(kRunSummaryFile)) r.summary = jsonObjectFile(*s, where + kRunSummaryFile);
  r.status = r.summary["status"].toString();
  if (r.status.isEmpty()) {
    // RunOutputWriter writes summary.json last: without it the process ended early.
    if (!file(kRunSummaryFile))
      r.warnings << where + kRunSummaryFile + ": missing (the run was stopped before it finished)";
    r.status = !r.steps.empty() && r.steps.back().diverged ? "diverged" : "stopped";
  }
  r.name = r.summary["name"].toString();
  if (r.name.isEmpty()) r.name = QString::fromStdString(r.config.displayName());
  readBookkeeping(r, where + kRunSummaryFile);
  return r;
}

bool isRunFolder(const QString& dir) { return QFileInfo(dir + "/" + kRunMetricsFile).isFile(); }

RunRecord loadRunFolder(const QString& dir) {
  const QString clean = QDir::cleanPath(dir);
  if (!QFileInfo(clean).isDir()) fail(clean + ": no such folder");
  if (!isRunFolder(clean))
    fail(clean + "/" + kRunMetricsFile + ": missing (not an ampstudio-cli run folder)");
  std::map<QString, QByteArray> files;
  for (const char* name : kRunFiles)
    if (QFileInfo::exists(clean + "/" + name)) files[name] = readFileBytes(clean + "/" + name);
  RunRecord r = runRecordFromFiles(files, clean + "/");
  r.checkpointPath = latestCheckpoint(clean);
  return r;
}

std::vector<RunRecord> loadRunFolders(const QString& dir) {
  const QString clean = QDir::cleanPath(dir);
  if (!QFileInfo(clean).isDir()) fail(clean + ": no such folder");
  if (isRunFolder(clean)) return {loadRunFolder(clean)};
  // A preset's comparison (summary.json {"runs": [{"label": ...}]}) gives the variants' order.
  QStringList order;
  // Only a hint: a summary that cannot be read (or is a pipe) leaves the folders' name order.
  std::string comparison;
  if (!readRegularFile((clean + "/" + kRunSummaryFile).toStdString(), kMaxRunFileBytes, comparison))
    for (const auto& v : QJsonDocument::fromJson(QByteArray::fromStdString(comparison)).object()["runs"].toArray())
      order << v.toObject()["label"].toString();
  const QDir d(clean);
  QStringList subs;
  for (const QString& label : order)
    if (!label.isEmpty() && !subs.contains(label) && isRunFolder(d.filePath(label))) subs << label;
  for (const QString& name : d.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
    if (!subs.contains(name) && isRunFolder(d.filePath(name))) subs << name;
  if (subs.isEmpty())
    fail(clean + ": not a run folder (no " + kRunMetricsFile + ") and no sub-folder is one");
  std::vector<RunRecord> runs;
  for (const QString& s : subs) runs.push_back(loadRunFolder(d.filePath(s)));
  return runs;
}

void writeRunFolder(const RunRecord& r, const QString& dir) {
  const QString clean = QDir::cleanPath(dir);
  if (!QDir().mkpath(clean)) fail(clean + ": cannot create the folder");
  for (const auto& [name, bytes] : runRecordFiles(r)) writeFileAtomically(clean + "/" + name, bytes);
  if (r.checkpointPath.isEmpty()) return;
  const QString source = QFileInfo(r.checkpointPath).canonicalFilePath();
  if (source.isEmpty()) fail(r.checkpointPath + ": no such checkpoint");
  const QString target = clean + "/checkpoints/" + QFileInfo(r.checkpointPath).fileName();
  if (QFileInfo(target).canonicalFilePath() == source) return;  // written back into its own folder
  if (!QDir().mkpath(clean + "/checkpoints")) fail(clean + "/checkpoints: cannot create the folder");
  writeFileAtomically(target, readFileBytes(r.checkpointPath));
}

}  // namespace amp
