#include "engine/io/experiment_file.h"

#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <algorithm>
#include <cstdint>

#include "engine/io/checkpoint_manifest.h"  // CheckpointError, kCheckpointAppVersion
#include "engine/io/run_bundle.h"
#include "engine/io/tensorboard_import.h"
#include "engine/io/zip_entries.h"

namespace amp {

namespace {

[[noreturn]] void fail(const QString& what) { throw ExperimentError(what.toStdString()); }

bool isHexColor(const QString& c) {
  static const QRegularExpression re(QStringLiteral("^#([0-9a-fA-F]{6}|[0-9a-fA-F]{8})$"));
  return re.match(c).hasMatch();
}

// The run files every saved run has; a loader that finds one missing reports the entry.

// Zip problems (not a zip, truncated, CRC) come as CheckpointError from zip_entries; callers of
// this file expect one error type.
std::map<QString, QByteArray> readEntries(const QString& path) {
  try {
    return readZipEntries(path);
  } catch (const CheckpointError& e) {
    throw ExperimentError(e.what());
  }
}

QJsonObject manifestObject(const QString& path, const std::map<QString, QByteArray>& entries) {
  const auto it = entries.find(kExperimentManifest);
  if (it == entries.end()) fail(path + ": " + kExperimentManifest + ": missing (not an AMP Studio experiment)");
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(it->second, &err);
  if (err.error != QJsonParseError::NoError || !doc.isObject())
    fail(path + ": " + kExperimentManifest + ": not a JSON object");
  return doc.object();
}

std::vector<ExperimentRun> experimentFromEntries(const QString& path, const std::map<QString, QByteArray>& entries) {
  const QJsonObject m = manifestObject(path, entries);
  const QString at = path + ": " + kExperimentManifest + ": ";
  if (m["format"].toString() != kExperimentFormat)
    fail(at + "\"format\" is not \"" + kExperimentFormat + "\" (not an AMP Studio experiment)");
  if (!m["version"].isDouble() || m["version"].toDouble() != m["version"].toInt())
    fail(at + "\"version\" must be an integer");
  if (m["version"].toInt() != kExperimentVersion)
    fail(at + "version " + QString::number(m["version"].toInt()) + " is not supported (this build reads version " +
         QString::number(kExperimentVersion) + "; a newer AMP Studio wrote it?)");
  if (!m["runs"].isArray()) fail(at + "\"runs\" must be a list");

  std::vector<ExperimentRun> runs;
  const QJsonArray list = m["runs"].toArray();
  for (qsizetype i = 0; i < list.size(); ++i) {
    const QString where = at + "runs[" + QString::number(i) + "]";
    if (!list[i].isObject()) fail(where + ": must be an object");
    const QJsonObject o = list[i].toObject();
    const QString folder = o["folder"].toString();
    // The folder names entries: one plain folder inside runs/, never "..", "/x" or "C:\\x".
    const QStringList parts = folder.split('/');
    if (parts.size() != 2 || parts[0] != QLatin1String("runs") || parts[1].isEmpty() || parts[1] == "." ||
        parts[1] == ".." || folder.contains('\\') || folder.contains(':'))
      fail(where + ": \"folder\" must be \"runs/<name>\"");
    if (!o["name"].isString() || o["name"].toString().isEmpty()) fail(where + ": \"name\" must be a non-empty string");
    ExperimentRun run;
    run.color = o["color"].toString();
    if (!o["color"].isString() || (!run.color.isEmpty() && !isHexColor(run.color)))
      fail(where + ": \"color\" must be \"#rrggbb\"");
    if (o.contains("visible") && !o["visible"].isBool()) fail(where + ": \"visible\" must be true or false");
    run.visible = o["visible"].toBool(true);
    if (o.contains("archived") && !o["archived"].isBool()) fail(where + ": \"archived\" must be true or false");
    run.archived = o["archived"].toBool(false);

    std::map<QString, QByteArray> files;
    for (const char* name : kRunFiles) {
      const auto it = entries.find(folder + "/" + name);
      if (it == entries.end()) fail(path + ": " + folder + "/" + name + ": missing entry");
      files[name] = it->second;
    }
    try {
      run.record = runRecordFromFiles(files, path + ": " + folder + "/");
    } catch (const RunRecordError& e) {
      throw ExperimentError(e.what());
    }
    run.record.name = o["name"].toString();
    if (o["checkpoint"].toBool()) {
      const auto it = entries.find(folder + "/" + kEmbeddedCheckpoint);
      if (it == entries.end()) fail(path + ": " + folder + "/" + kEmbeddedCheckpoint + ": missing entry");
      run.checkpointZip = it->second;
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace

QString safeRunFolderName(int index, const QString& name) {
  static const QRegularExpression unsafe(QStringLiteral("[^A-Za-z0-9._-]+"));
  QString safe = QString(name).replace(unsafe, QStringLiteral("_")).left(40);
  // Leading dots would make hidden folders (and "." / ".." special ones) once extracted.
  while (safe.startsWith('.')) safe.remove(0, 1);
  if (safe.isEmpty()) safe = QStringLiteral("run");
  return QString::number(index) + "-" + safe;
}

QByteArray checkpointToEmbed(const QByteArray& given, const RunRecord& r) {
  if (!given.isEmpty() || r.checkpointPath.isEmpty()) return given;
  QFile f(r.checkpointPath);
  if (!f.open(QIODevice::ReadOnly)) fail(r.checkpointPath + ": cannot read the checkpoint (" + f.errorString() + ")");
  return f.readAll();
}

void saveExperiment(const QString& path, const std::vector<ExperimentRun>& runs) {
  std::vector<ZipEntry> entries;
  QJsonArray list;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ExperimentRun& run = runs[i];
    const QString name = run.record.name.isEmpty() ? QString::fromStdString(run.record.config.displayName())
                                                   : run.record.name;
    if (!run.color.isEmpty() && !isHexColor(run.color))
      fail(path + ": run '" + name + "': colour \"" + run.color + "\" is not \"#rrggbb\"");
    const QString folder = "runs/" + safeRunFolderName(static_cast<int>(i), name);
    RunRecord record = run.record;
    record.name = name;
    for (auto& [file, bytes] : runRecordFiles(record)) entries.push_back(ZipEntry{folder + "/" + file, std::move(bytes)});
    const QByteArray checkpoint = checkpointToEmbed(run.checkpointZip, run.record);
    // A checkpoint is mostly raw tensor bytes, already stored uncompressed: deflating it again
    // would cost time for next to nothing.
    if (!checkpoint.isEmpty()) entries.push_back(ZipEntry{folder + "/" + kEmbeddedCheckpoint, checkpoint, false});
    QJsonObject entry{{"name", name},
                      {"color", run.color},
                      {"visible", run.visible},
                      {"folder", folder},
                      {"status", record.status},
                      {"checkpoint", !checkpoint.isEmpty()}};
    if (run.archived) entry["archived"] = true;  // written only when set: older readers ignore it
    list.append(entry);
  }
  const QJsonObject manifest{{"format", kExperimentFormat},
                             {"version", kExperimentVersion},
                             {"app_version", kCheckpointAppVersion},
                             {"created", QDateTime::currentDateTimeUtc().toString(Qt::ISODate)},
                             {"runs", list}};
  // The manifest first, so a reader (or `unzip -l`) sees what the file is before the bulk.
  entries.insert(entries.begin(), ZipEntry{kExperimentManifest, QJsonDocument(manifest).toJson()});
  try {
    writeZipAtomically(path, entries);
  } catch (const CheckpointError& e) {
    throw ExperimentError(e.what());
  }
}

std::vector<ExperimentRun> loadExperiment(const QString& path) {
  return experimentFromEntries(path, readEntries(path));
}

std::vector<ExperimentRun> openAnything(const QString& path) {
  const QFileInfo fi(path);
  if (!fi.exists()) fail(path + ": no such file or folder");
  if (fi.isDir()) {
    std::vector<ExperimentRun> runs;
    try {
      for (RunRecord& r : loadRunsOrTensorBoard(path)) runs.push_back({std::move(r), QString(), true, QByteArray()});
    } catch (const RunRecordError& e) {
      throw ExperimentError(e.what());
    }
    return runs;
  }
  const auto entries = readEntries(path);
  if (entries.count(kExperimentManifest)) {
    const QString format = manifestObject(path, entries)["format"].toString();
    if (format == QLatin1String("ampstudio-checkpoint"))
      fail(path + ": a checkpoint, not an experiment or a run (resume it with ampstudio-cli run --resume, or "
                  "open the run folder that holds it)");
    return experimentFromEntries(path, entries);
  }
  if (isRunBundle(entries)) return {runBundleFromEntries(path, entries)};
  fail(path + ": not an AMP Studio experiment (.ampx), run bundle or run folder (no " + kExperimentManifest +
       " and no " + kRunMetricsFile + ")");
}

}  // namespace amp
