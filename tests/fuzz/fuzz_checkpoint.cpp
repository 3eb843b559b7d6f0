// Checkpoints past the zip layer: the input is the zip's entries ("<name>\n<bytes>" parts, see
// fuzz_support.h), which the harness writes with our zip writer and hands to loadCheckpoint
// with a trainer of the tiny run (tiny_run.h). Mutated entries would all fail their SHA-256
// check, so when the first byte is odd the harness first rewrites manifest.json's "entries"
// with the right digests: then the fuzzer reaches the safetensors, scaler and optimizer checks
// and the fit against the model. Every refusal is a CheckpointError; a checkpoint that loads
// must leave a trainer that can take its next step.
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdint>
#include <memory>

#include "engine/io/checkpoint.h"
#include "engine/io/metrics_json.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/tiny_run.h"

namespace {

QByteArray withDigests(const std::vector<amp::ZipEntry>& entries, const QByteArray& manifest) {
  QJsonParseError err;
  QJsonDocument doc = QJsonDocument::fromJson(manifest, &err);
  if (err.error != QJsonParseError::NoError || !doc.isObject()) return manifest;
  QJsonObject digests;
  for (const auto& e : entries)
    if (e.name != QLatin1String(amp::kManifestEntry))
      digests[e.name] = QJsonObject{{"sha256", QString::fromLatin1(amp::sha256Hex(e.data))},
                                    {"bytes", static_cast<double>(e.data.size())}};
  QJsonObject o = doc.object();
  o["entries"] = digests;
  return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  if (size == 0) return 0;
  static Trainer trainer(fuzz::tinyRunConfig());
  std::vector<ZipEntry> entries = fuzz::entriesFromParts(fuzz::bytesOf(data + 1, size - 1));
  if (data[0] & 1)
    for (auto& e : entries)
      if (e.name == QLatin1String(kManifestEntry)) e.data = withDigests(entries, e.data);
  static const QString path = fuzz::scratchPath(QStringLiteral("step-7.zip"));
  try {
    writeZipAtomically(path, entries);
  } catch (const CheckpointError& e) {
    fuzz::refused(e);
    return 0;  // an entry our writer cannot store (not the reader's business)
  }
  try {
    loadCheckpoint(trainer, path);
  } catch (const CheckpointError& e) {
    fuzz::refused(e);
    return 0;
  }
  (void)stepMetricsFromJsonLines(checkpointMetrics(path));
  if (!trainer.finished()) (void)trainer.step();
  return 0;
}
