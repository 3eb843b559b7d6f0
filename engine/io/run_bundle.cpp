#include "engine/io/run_bundle.h"

#include <QRegularExpression>

#include "engine/io/checkpoint_manifest.h"  // CheckpointError
#include "engine/io/zip_entries.h"

namespace amp {

namespace {

[[noreturn]] void fail(const QString& what) { throw ExperimentError(what.toStdString()); }

constexpr const char* kChartsFolder = "charts/";

}  // namespace

void writeRunBundle(const QString& zipPath, const RunRecord& r, const std::map<QString, QByteArray>& charts,
                    const QByteArray& checkpointZip) {
  // One plain file name: the bundle must not reach outside charts/ once extracted.
  static const QRegularExpression chartName(QStringLiteral("^[A-Za-z0-9_][A-Za-z0-9._ -]*\\.(png|svg|pdf)$"));
  std::vector<ZipEntry> entries;
  RunRecord named = r;
  if (named.name.isEmpty()) named.name = QString::fromStdString(r.config.displayName());
  for (auto& [file, bytes] : runRecordFiles(named)) entries.push_back(ZipEntry{file, std::move(bytes)});
  for (const auto& [name, bytes] : charts) {
    if (!chartName.match(name).hasMatch())
      fail(zipPath + ": chart \"" + name + "\": the name must be a plain file name ending in .png, .svg or .pdf");
    // PNG and PDF are compressed already; SVG is text and shrinks well.
    entries.push_back(ZipEntry{kChartsFolder + name, bytes, name.endsWith(QLatin1String(".svg"))});
  }
  const QByteArray checkpoint = checkpointToEmbed(checkpointZip, r);
  if (!checkpoint.isEmpty()) entries.push_back(ZipEntry{kEmbeddedCheckpoint, checkpoint, false});
  try {
    writeZipAtomically(zipPath, entries);
  } catch (const CheckpointError& e) {
    throw ExperimentError(e.what());
  }
}

bool isRunBundle(const std::map<QString, QByteArray>& entries) {
  return entries.count(kRunMetricsFile) > 0 || entries.count(kRunConfigFile) > 0;
}

ExperimentRun runBundleFromEntries(const QString& path, const std::map<QString, QByteArray>& entries) {
  std::map<QString, QByteArray> files;
  for (const char* name : kRunFiles) {
    const auto it = entries.find(name);
    if (it == entries.end()) fail(path + ": " + name + ": missing entry (an incomplete run bundle)");
    files[name] = it->second;
  }
  ExperimentRun run;
  try {
    run.record = runRecordFromFiles(files, path + ": ");
  } catch (const RunRecordError& e) {
    throw ExperimentError(e.what());
  }
  if (const auto it = entries.find(kEmbeddedCheckpoint); it != entries.end()) run.checkpointZip = it->second;
  return run;
}

}  // namespace amp
