#include "engine/io/checkpoint.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <set>
#include <span>

#include "engine/amp/fp8_context.h"
#include "engine/config/config_schema.h"
#include "engine/io/safetensors.h"
#include "engine/io/zip_entries.h"

namespace amp {

// safetensors and the backends' raw bytes are both little-endian only on such hosts.
static_assert(std::endian::native == std::endian::little, "checkpoints assume a little-endian host");

namespace {

[[noreturn]] void fail(const QString& path, const std::string& entry, const std::string& what) {
  throw CheckpointError(path.toStdString() + ": " + entry + ": " + what);
}

SafeTensor toSafeTensor(Backend& be, const std::string& name, const Tensor& t) {
  const std::vector<std::uint8_t> bytes = be.toHostBytes(t);
  return {name, t.dtype(), t.shape(),
          QByteArray(reinterpret_cast<const char*>(bytes.data()), static_cast<qsizetype>(bytes.size()))};
}

void upload(Backend& be, Tensor& dst, const QByteArray& bytes) {
  be.uploadBytes(dst, std::span(reinterpret_cast<const std::uint8_t*>(bytes.constData()),
                                static_cast<std::size_t>(bytes.size())));
}

std::string specText(DType dt, const Shape& s) {
  return safetensorsDtypeName(dt).value_or("?") + " " + shapeString(s);
}

// "checkpoint '2.weight' F32 (2, 64) vs this model '2.weight' F32 (2, 32)" for the first
// parameter that differs.
std::string firstDifference(const std::vector<TensorSpec>& saved, const std::vector<TensorSpec>& model) {
  auto text = [](const std::vector<TensorSpec>& v, std::size_t i) {
    return i < v.size() ? "'" + v[i].name + "' " + specText(v[i].dtype, v[i].shape) : std::string("(none)");
  };
  for (std::size_t i = 0; i < std::max(saved.size(), model.size()); ++i)
    if (i >= saved.size() || i >= model.size() || !(saved[i] == model[i]))
      return "checkpoint " + text(saved, i) + " vs this model " + text(model, i);
  return "";
}

// Everything a checkpoint holds, read and verified in host memory.
struct LoadedCheckpoint {
  CheckpointInfo info;
  SafetensorsFile model, optimizer;
  std::map<std::string, double> scaler;
  std::optional<std::map<std::string, std::vector<float>>> fp8;  // absent: the run had no fp8
};

CheckpointInfo parseManifest(const QString& path, const std::map<QString, QByteArray>& entries) {
  const auto it = entries.find(kManifestEntry);
  if (it == entries.end()) fail(path, kManifestEntry, "missing entry (not an AMP Studio checkpoint?)");
  try {
    return manifestFromJson(it->second);
  } catch (const CheckpointError& e) {
    throw CheckpointError(path.toStdString() + ": " + e.what());
  }
}

// The entry's bytes, after checking them against the manifest's digest.
const QByteArray& verifiedEntry(const QString& path, const std::map<QString, QByteArray>& entries,
                                const CheckpointInfo& info, const char* name) {
  const auto it = entries.find(name);
  if (it == entries.end()) fail(path, name, "missing entry");
  const auto d = info.entries.find(name);
  if (d == info.entries.end()) fail(path, name, "not listed in manifest.json");
  if (it->second.size() != d->second.bytes)
    fail(path, name, std::to_string(it->second.size()) + " bytes, but manifest.json lists " +
                         std::to_string(d->second.bytes) + " (the entry was changed after it was written)");
  if (sha256Hex(it->second) != d->second.sha256)
    fail(path, name, "SHA-256 mismatch with manifest.json (the entry was changed or corrupted after it was written)");
  return it->second;
}

SafetensorsFile parseSafetensorsEntry(const QString& path, const char* name, const QByteArray& bytes) {
  try {
    return readSafetensors(bytes);
  } catch (const SafetensorsError& e) {
    fail(path, name, e.what());
  }
}

std::map<std::string, double> parseScaler(const QString& path, const QByteArray& bytes) {
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(bytes, &err);
  if (err.error != QJsonParseError::NoError || !doc.isObject())
    fail(path, kScalerEntry, "not a JSON object");
  std::map<std::string, double> out;
  const QJsonObject o = doc.object();
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (!it.value().isDouble()) fail(path, kScalerEntry, "\"" + it.key().toStdString() + "\" must be a number");
    out[it.key().toStdString()] = it.value().toDouble();
  }
  return out;
}

// manifest.json alone, however large the zip says it is: a manifest is a few kilobytes.
std::map<QString, QByteArray> readManifestEntry(const QString& path) {
  ZipReadLimits limits;
  limits.maxEntryBytes = 16 << 20;
  return readZipEntries(path, {kManifestEntry}, limits);
}

// The manifest is read first, alone: the other entries are then read only when the zip
// declares exactly the sizes it lists, and an entry it does not list is refused unread, so a
// small checkpoint hiding gigabytes of zeros costs nothing to turn away.
std::map<QString, QByteArray> readListedEntries(const QString& path, const CheckpointInfo& info,
                                                const QStringList& names) {
  ZipReadLimits limits;
  limits.allowedNames << kManifestEntry;
  for (const auto& [name, digest] : info.entries) {
    limits.allowedNames << QString::fromStdString(name);
    limits.exactBytes[QString::fromStdString(name)] = digest.bytes;
  }
  return readZipEntries(path, names, limits);
}

LoadedCheckpoint readVerified(const QString& path) {
  LoadedCheckpoint c;
  c.info = parseManifest(path, readManifestEntry(path));
  const auto entries = readListedEntries(path, c.info, {kModelEntry, kOptimizerEntry, kScalerEntry, kMetricsEntry});
  for (const char* name : {kModelEntry, kOptimizerEntry, kScalerEntry, kMetricsEntry})
    verifiedEntry(path, entries, c.info, name);
  c.model = parseSafetensorsEntry(path, kModelEntry, entries.at(kModelEntry));
  c.optimizer = parseSafetensorsEntry(path, kOptimizerEntry, entries.at(kOptimizerEntry));
  c.scaler = parseScaler(path, entries.at(kScalerEntry));
  if (c.info.entries.count(kFp8Entry)) {
    const auto fp8 = readListedEntries(path, c.info, {kFp8Entry});
    const QJsonDocument doc = QJsonDocument::fromJson(verifiedEntry(path, fp8, c.info, kFp8Entry));
    if (!doc.isObject()) fail(path, kFp8Entry, "not a JSON object");
    std::map<std::string, std::vector<float>> state;
    const QJsonObject o = doc.object();
    for (auto it = o.begin(); it != o.end(); ++it) {
      if (!it.value().isArray()) fail(path, kFp8Entry, "\"" + it.key().toStdString() + "\" must be an array of numbers");
      std::vector<float>& v = state[it.key().toStdString()];
      for (const QJsonValue& x : it.value().toArray()) {
        if (!x.isDouble()) fail(path, kFp8Entry, "\"" + it.key().toStdString() + "\" holds a non-number");
        v.push_back(static_cast<float>(x.toDouble()));
      }
    }
    c.fp8 = std::move(state);
  }
  return c;
}

struct Slot {
  std::string name;
  Tensor* tensor;
};

// Matches a file's tensors to the trainer's: same names, dtypes and shapes, one tensor for
// every slot and none left over.
std::vector<const SafeTensor*> matchTensors(const QString& path, const char* entry, const SafetensorsFile& file,
                                            const std::vector<Slot>& wanted) {
  std::vector<const SafeTensor*> out;
  std::set<std::string> names;
  for (const Slot& s : wanted) {
    names.insert(s.name);
    const SafeTensor* t = file.find(s.name);
    if (!t) fail(path, entry, "no tensor '" + s.name + "' (a checkpoint of another model?)");
    if (t && (t->dtype != s.tensor->dtype() || t->shape != s.tensor->shape()))
      fail(path, entry, "tensor '" + s.name + "' is " + specText(t->dtype, t->shape) + ", but this model's is " +
                            specText(s.tensor->dtype(), s.tensor->shape()) + " (a checkpoint of another model?)");
    out.push_back(t);
  }
  for (const auto& t : file.tensors)
    if (!names.count(t.name))
      fail(path, entry, "tensor '" + t.name + "' does not belong to this model (a checkpoint of another model?)");
  return out;
}

void validateOptimizer(const QString& path, const LoadedCheckpoint& c, Optimizer& opt) {
  const std::string name = opt.config().name;
  if (c.info.optimizerName != name)
    fail(path, kOptimizerEntry, "state of optimizer '" + c.info.optimizerName + "' cannot be loaded into '" + name + "'");
  const auto expected = opt.stateSpecs();
  std::set<std::string> names;
  for (const auto& [n, shape] : expected) {
    names.insert(n);
    const SafeTensor* t = c.optimizer.find(n);
    if (t && (t->dtype != DType::F32 || t->shape != shape))
      fail(path, kOptimizerEntry, "tensor '" + n + "' is " + specText(t->dtype, t->shape) + ", expected " +
                                      specText(DType::F32, shape));
  }
  for (const auto& t : c.optimizer.tensors)
    if (!names.count(t.name))
      fail(path, kOptimizerEntry, "tensor '" + t.name + "' is not state of this model's " + name + " optimizer");
  std::set<std::string> params;
  for (Parameter* p : opt.params()) params.insert(p->name);
  for (const auto& [key, v] : c.info.optimizerScalars) {
    if (key == "step") {
      if (!(v >= 0 && v == std::floor(v))) fail(path, kManifestEntry, "optimizer step must be an integer >= 0");
      continue;
    }
    const auto dot = key.rfind(".started");
    const std::string param = key.substr(0, dot);
    if (dot == std::string::npos || dot + 8 != key.size() || !params.count(param))
      fail(path, kManifestEntry, "optimizer state '" + key + "' does not belong to this model");
    // A stepped parameter's moments must be there, or the next step would start from zeros.
    for (const auto& [n, shape] : expected)
      if (n.rfind(param + ".", 0) == 0 && n.find('.', param.size() + 1) == std::string::npos && !c.optimizer.find(n))
        fail(path, kOptimizerEntry, "no tensor '" + n + "' although '" + param + "' was stepped");
  }
}

// "data.path=DIR" or "data.name=spirals": what the message says the data came from.
std::string dataSourceText(const RunConfig& c) {
  return c.data.path.empty() ? "data.name=" + c.data.name : "data.path=" + c.data.path;
}

void validateProgress(const QString& path, const LoadedCheckpoint& c, Trainer& t) {
  if (auto problem = t.loaderStateProblem(c.info.loader)) fail(path, kManifestEntry, *problem);
  // The same sizes and config are not the same data: another file of the same size, or a
  // relative data.path read from another folder, trained on silently.
  if (!c.info.dataFingerprint.empty() && c.info.dataFingerprint != t.dataFingerprint())
    fail(path, kManifestEntry,
         "the run trained on other data than " + dataSourceText(t.config()) +
             " now holds (data fingerprint " + c.info.dataFingerprint + ", now " + t.dataFingerprint() +
             "); resume with the data it was trained on");
}

void validateScaler(const QString& path, const LoadedCheckpoint& c, const GradScaler& scaler) {
  if (scaler.isEnabled() && c.scaler.empty())
    fail(path, kScalerEntry, "empty (the checkpoint's run had no loss scaler), but this run scales the loss");
  if (!scaler.isEnabled() && !c.scaler.empty())
    fail(path, kScalerEntry, "holds loss-scaler state, but this run has no loss scaler");
  GradScaler probe(scaler.config());  // a scratch copy takes the state first, to find problems
  try {
    probe.loadStateDict(c.scaler);
  } catch (const std::invalid_argument& e) {
    fail(path, kScalerEntry, e.what());
  }
}

}  // namespace

QString checkpointFileName(std::int64_t step) { return QStringLiteral("step-%1.zip").arg(step); }

void saveCheckpoint(Trainer& trainer, const QString& zipPath, const QByteArray& metricsJsonl) {
  Backend& be = trainer.backend();
  CheckpointInfo m;
  m.created = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
  m.config = trainer.config();
  const TrainerProgress p = trainer.progress();
  m.step = p.step;
  m.epoch = p.loader.epoch;
  m.schedulerSteps = p.schedulerSteps;
  m.stopped = p.stopped;
  m.loader = p.loader;
  m.dataFingerprint = trainer.dataFingerprint();

  std::vector<SafeTensor> model, optimizer;
  for (Parameter* prm : trainer.model().parameters()) {
    model.push_back(toSafeTensor(be, prm->name, prm->value));
    m.parameters.push_back({prm->name, prm->value.dtype(), prm->value.shape()});
  }
  for (const auto& [name, t] : trainer.model().buffers()) {
    model.push_back(toSafeTensor(be, name, *t));
    m.buffers.push_back({name, t->dtype(), t->shape()});
  }
  // A tied weight under its second name too ("lm_head.weight"), as PyTorch's state_dict holds it:
  // torch's load_state_dict(strict=True) wants every key.
  for (const auto& [name, prm] : trainer.model().tiedParameters()) model.push_back(toSafeTensor(be, name, prm->value));
  for (const auto& [name, t] : trainer.optimizer().stateTensors()) optimizer.push_back(toSafeTensor(be, name, *t));
  m.optimizerName = trainer.optimizer().config().name;
  m.optimizerScalars = trainer.optimizer().stateScalars();

  QJsonObject scaler;
  for (const auto& [k, v] : trainer.scaler().stateDict()) scaler[QString::fromStdString(k)] = v;

  std::vector<ZipEntry> entries;
  try {
    entries.push_back({kModelEntry, writeSafetensors(model, {{"format", "pt"}}), false});
    entries.push_back({kOptimizerEntry, writeSafetensors(optimizer, {{"format", "pt"}}), false});
  } catch (const SafetensorsError& e) {
    throw CheckpointError(zipPath.toStdString() + ": " + e.what());
  }
  entries.push_back({kScalerEntry, QJsonDocument(scaler).toJson(QJsonDocument::Indented), true});
  entries.push_back({kMetricsEntry, metricsJsonl, true});
  if (Fp8Context* fp8 = trainer.fp8()) {
    QJsonObject state;
    for (const auto& [name, values] : fp8->state()) {
      QJsonArray a;
      for (float v : values) a.append(static_cast<double>(v));  // a float is exact as a double
      state[QString::fromStdString(name)] = a;
    }
    entries.push_back({kFp8Entry, QJsonDocument(state).toJson(QJsonDocument::Compact), true});
  }
  for (const auto& e : entries) m.entries[e.name.toStdString()] = {sha256Hex(e.data), e.data.size()};
  // The manifest goes first, so a reader that wants only it finds it at once.
  entries.insert(entries.begin(), ZipEntry{kManifestEntry, manifestToJson(m), true});
  writeZipAtomically(zipPath, entries);
}

CheckpointInfo readCheckpointInfo(const QString& zipPath) {
  return parseManifest(zipPath, readManifestEntry(zipPath));
}

QByteArray checkpointMetrics(const QString& zipPath) {
  const CheckpointInfo info = parseManifest(zipPath, readManifestEntry(zipPath));
  return verifiedEntry(zipPath, readListedEntries(zipPath, info, {kMetricsEntry}), info, kMetricsEntry);
}

SafetensorsFile checkpointModel(const QString& zipPath) {
  const CheckpointInfo info = parseManifest(zipPath, readManifestEntry(zipPath));
  const auto entries = readListedEntries(zipPath, info, {kModelEntry});
  return parseSafetensorsEntry(zipPath, kModelEntry, verifiedEntry(zipPath, entries, info, kModelEntry));
}

std::vector<SafeTensor> modelTensors(Trainer& trainer) {
  Backend& be = trainer.backend();
  std::vector<SafeTensor> out;
  for (Parameter* prm : trainer.model().parameters()) out.push_back(toSafeTensor(be, prm->name, prm->value));
  for (const auto& [name, t] : trainer.model().buffers()) out.push_back(toSafeTensor(be, name, *t));
  for (const auto& [name, prm] : trainer.model().tiedParameters()) out.push_back(toSafeTensor(be, name, prm->value));
  return out;
}

void loadCheckpoint(Trainer& trainer, const QString& zipPath) {
  const LoadedCheckpoint c = readVerified(zipPath);
  Backend& be = trainer.backend();

  // 1. Validate everything against the trainer; nothing is changed yet.
  std::vector<Slot> params, buffers;
  for (Parameter* p : trainer.model().parameters()) params.push_back({p->name, &p->value});
  for (const auto& [name, t] : trainer.model().buffers()) buffers.push_back({name, t});
  std::vector<TensorSpec> specs;
  for (const Slot& s : params) specs.push_back({s.name, s.tensor->dtype(), s.tensor->shape()});
  if (c.info.parameters != specs)
    fail(zipPath, kManifestEntry, "the parameters do not match this model: " + firstDifference(c.info.parameters, specs) +
                                      " (a checkpoint of another model?)");
  std::vector<Slot> all = params;
  all.insert(all.end(), buffers.begin(), buffers.end());
  // A tied weight's second copy loads into the same tensor, after its owner's (the same values).
  for (const auto& [name, prm] : trainer.model().tiedParameters()) all.push_back({name, &prm->value});
  const auto modelTensors = matchTensors(zipPath, kModelEntry, c.model, all);
  validateOptimizer(zipPath, c, trainer.optimizer());
  validateScaler(zipPath, c, trainer.scaler());
  validateProgress(zipPath, c, trainer);
  if (trainer.fp8() && !c.fp8)
    fail(zipPath, kFp8Entry, "missing: this run trains in fp8, the checkpoint's run did not (its scales would start over)");
  if (!trainer.fp8() && c.fp8) fail(zipPath, kFp8Entry, "holds fp8 scaling state, but this run does not train in fp8");
  if (c.fp8) {
    Fp8Context probe(trainer.fp8()->config(), 0);  // a scratch copy takes the state first
    probe.setModel(trainer.model());
    try {
      probe.restore(*c.fp8);
    } catch (const ConfigError& e) {
      fail(zipPath, kFp8Entry, e.what());
    }
  }

  // 2. Apply in one go. Uploads of validated sizes and the checks above leave nothing to fail.
  for (std::size_t i = 0; i < all.size(); ++i) upload(be, *all[i].tensor, modelTensors[i]->data);
  // The masters were written in place: the 16-bit copies autocast kept no longer follow them.
  forgetWeightCopies(trainer.model().parameters());
  Optimizer& opt = trainer.optimizer();
  opt.prepareStateForLoad();
  for (auto& [name, t] : opt.stateTensors()) {
    // State of a parameter never stepped is absent from the file: zeros, as PyTorch starts it.
    if (const SafeTensor* s = c.optimizer.find(name)) upload(be, *t, s->data);
    else be.fill(*t, 0.0f);
  }
  opt.setStateScalars(c.info.optimizerScalars);
  trainer.scaler().loadStateDict(c.scaler);
  if (c.fp8) trainer.fp8()->restore(*c.fp8);
  trainer.restoreProgress({c.info.step, c.info.schedulerSteps, c.info.loader, c.info.stopped});
}

std::optional<std::string> resumeConfigError(const RunConfig& saved, const RunConfig& wanted) {
  // Keys whose change would not fit the saved weights, optimizer moments, loader position or
  // scaler state, or would silently make it another run.
  auto frozen = [](const std::string& k) {
    return k.rfind("model.", 0) == 0 || k.rfind("data.", 0) == 0 || k == "seed" || k == "amp.mode" ||
           k == "scaler.kind" || k == "scaler.enabled" || k == "optimizer.name" || k == "train.batch_size" ||
           k == "train.loss";
  };
  const auto before = flattenConfig(saved);
  const auto after = flattenConfig(wanted);
  std::map<std::string, std::string> old(before.begin(), before.end());
  for (const auto& [k, v] : after) {
    const auto it = old.find(k);
    const std::string was = it == old.end() ? "" : it->second;
    if (frozen(k) && v != was)
      return k + ": a resumed run keeps the checkpoint's model, data, seed and precision ('" + was +
             "' in the checkpoint, '" + v + "' asked)";
  }
  return std::nullopt;
}

}  // namespace amp
