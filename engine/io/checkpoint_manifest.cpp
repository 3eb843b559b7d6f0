#include "engine/io/checkpoint_manifest.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QRegularExpression>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>
#include <cmath>

#include "engine/config/config_schema.h"
#include "engine/io/config_json.h"
#include "engine/io/safetensors.h"

namespace amp {

namespace {

constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

[[noreturn]] void fail(const std::string& what) {
  throw CheckpointError(std::string(kManifestEntry) + ": " + what);
}

// Typed access to a JSON object that reports the dotted path of a missing or mistyped field.
class Reader {
 public:
  Reader(QJsonObject o, std::string path) : m_o(std::move(o)), m_path(std::move(path)) {}

  QJsonValue value(const char* key) const {
    const QJsonValue v = m_o.value(QLatin1String(key));
    if (v.isUndefined()) fail("missing \"" + where(key) + "\"");
    return v;
  }
  std::int64_t integer(const char* key, std::int64_t lowest = 0) const {
    const QJsonValue v = value(key);
    const double d = v.toDouble();
    if (!v.isDouble() || d != std::floor(d) || d < double(lowest) || std::fabs(d) > kMaxExactInteger)
      fail("\"" + where(key) + "\" must be an integer >= " + std::to_string(lowest));
    return static_cast<std::int64_t>(d);
  }
  std::string string(const char* key) const {
    const QJsonValue v = value(key);
    if (!v.isString()) fail("\"" + where(key) + "\" must be a string");
    return v.toString().toStdString();
  }
  QJsonArray array(const char* key) const {
    const QJsonValue v = value(key);
    if (!v.isArray()) fail("\"" + where(key) + "\" must be a list");
    return v.toArray();
  }
  Reader object(const char* key) const {
    const QJsonValue v = value(key);
    if (!v.isObject()) fail("\"" + where(key) + "\" must be an object");
    return Reader(v.toObject(), where(key));
  }
  const QJsonObject& raw() const { return m_o; }
  std::string where(const std::string& key) const { return m_path.empty() ? key : m_path + "." + key; }

 private:
  QJsonObject m_o;
  std::string m_path;
};

QJsonArray shapeToJson(const Shape& s) {
  QJsonArray a;
  for (auto d : s) a.append(static_cast<double>(d));
  return a;
}

QJsonArray specsToJson(const std::vector<TensorSpec>& specs) {
  QJsonArray a;
  for (const auto& s : specs) {
    QJsonObject o;
    o["name"] = QString::fromStdString(s.name);
    o["dtype"] = QString::fromStdString(safetensorsDtypeName(s.dtype).value_or("?"));
    o["shape"] = shapeToJson(s.shape);
    a.append(o);
  }
  return a;
}

std::vector<TensorSpec> specsFromJson(const QJsonArray& a, const std::string& path) {
  std::vector<TensorSpec> out;
  for (qsizetype i = 0; i < a.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (!a[i].isObject()) fail("\"" + at + "\" must be an object");
    const Reader r(a[i].toObject(), at);
    TensorSpec s;
    s.name = r.string("name");
    const auto dt = parseSafetensorsDtype(r.string("dtype"));
    if (!dt) fail("\"" + r.where("dtype") + "\": unknown dtype '" + r.string("dtype") + "'");
    s.dtype = *dt;
    for (const QJsonValue& d : r.array("shape")) {
      // At most 2^53, as every count here: a larger double (1.8e19) does not fit the int64_t it
      // is cast to (undefined behaviour; found by fuzz_checkpoint_manifest).
      const double x = d.toDouble();
      if (!d.isDouble() || !(x >= 0 && x <= kMaxExactInteger) || x != std::floor(x))
        fail("\"" + r.where("shape") + "\" must hold integers from 0 to 2^53");
      s.shape.push_back(static_cast<std::int64_t>(d.toDouble()));
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The 64-bit generator words as hex strings: a JSON number (a double) would round them.
QString wordHex(std::uint64_t w) { return QString::number(w, 16).rightJustified(16, '0'); }

std::uint64_t wordFromHex(const QJsonValue& v, const std::string& path) {
  bool ok = false;
  const std::uint64_t w = v.toString().toULongLong(&ok, 16);
  if (!v.isString() || !ok) fail("\"" + path + "\" must be 16 hex digits");
  return w;
}


}  // namespace

QByteArray sha256Hex(const QByteArray& data) {
  return QCryptographicHash::hash(data, QCryptographicHash::Sha256).toHex();
}

QByteArray manifestToJson(const CheckpointInfo& m) {
  QJsonObject o;
  o["format"] = "ampstudio-checkpoint";
  o["format_version"] = m.formatVersion;
  o["app_version"] = QString::fromStdString(m.appVersion);
  o["created"] = QString::fromStdString(m.created);
  o["config"] = configToJson(m.config);  // 64-bit seeds as exact strings
  o["step"] = static_cast<double>(m.step);
  o["epoch"] = static_cast<double>(m.epoch);
  o["scheduler_steps"] = static_cast<double>(m.schedulerSteps);
  if (m.stopped) o["stopped"] = true;
  if (!m.dataFingerprint.empty()) o["data_fingerprint"] = QString::fromStdString(m.dataFingerprint);
  QJsonObject loader;
  loader["epoch"] = static_cast<double>(m.loader.epoch);
  loader["position"] = static_cast<double>(m.loader.position);
  loader["count"] = static_cast<double>(m.loader.count);
  loader["batch_size"] = static_cast<double>(m.loader.batchSize);
  QJsonArray rng;
  for (std::uint64_t w : m.loader.rng) rng.append(wordHex(w));
  loader["rng_state"] = rng;
  o["loader"] = loader;
  QJsonObject model;
  model["parameters"] = specsToJson(m.parameters);
  model["buffers"] = specsToJson(m.buffers);
  o["model"] = model;
  QJsonObject opt, scalars;
  opt["name"] = QString::fromStdString(m.optimizerName);
  for (const auto& [k, v] : m.optimizerScalars) scalars[QString::fromStdString(k)] = v;
  opt["state"] = scalars;
  o["optimizer"] = opt;
  QJsonObject entries;
  for (const auto& [name, d] : m.entries) {
    QJsonObject e;
    e["sha256"] = QString::fromLatin1(d.sha256);
    e["bytes"] = static_cast<double>(d.bytes);
    entries[QString::fromStdString(name)] = e;
  }
  o["entries"] = entries;
  return QJsonDocument(o).toJson(QJsonDocument::Indented);
}

CheckpointInfo manifestFromJson(const QByteArray& bytes) {
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(bytes, &err);
  if (err.error != QJsonParseError::NoError)
    fail("not valid JSON at offset " + std::to_string(err.offset) + " (" + err.errorString().toStdString() + ")");
  if (!doc.isObject()) fail("the top level must be a JSON object");
  const Reader r(doc.object(), "");
  if (r.raw().value("format").toString() != "ampstudio-checkpoint")
    fail("not an AMP Studio checkpoint manifest (\"format\" is not \"ampstudio-checkpoint\")");

  CheckpointInfo m;
  m.formatVersion = static_cast<int>(r.integer("format_version", 1));
  if (m.formatVersion != kCheckpointFormatVersion)
    fail("unknown format version " + std::to_string(m.formatVersion) + " (this build reads version " +
         std::to_string(kCheckpointFormatVersion) + "; was it written by a newer AMP Studio?)");
  m.appVersion = r.string("app_version");
  m.created = r.raw().value("created").toString().toStdString();

  const Reader cfg = r.object("config");
  try {
    QJsonObject config = cfg.raw();
    // Checkpoints before the integer range checks wrote seeds >= 2^63 as negative decimal
    // strings (the same 64 bits, signed): read them as the unsigned seed they stand for.
    const QString seed = config.value("seed").toString();
    bool isSigned = false;
    const qint64 bits = seed.startsWith(QLatin1Char('-')) ? seed.toLongLong(&isSigned) : 0;
    if (isSigned) config["seed"] = QString::number(static_cast<quint64>(bits));
    applyConfigJson(m.config, config);
  } catch (const ConfigError& e) {
    fail(std::string("config: ") + e.what());
  }
  if (auto e = validateRunConfig(m.config)) fail("config: " + *e);

  m.step = r.integer("step");
  m.epoch = r.integer("epoch");
  m.schedulerSteps = r.integer("scheduler_steps");
  m.stopped = r.raw().value("stopped").toBool(false);  // optional: absent in running checkpoints
  // Optional (absent in checkpoints written before it existed): 16 hex digits.
  if (const QJsonValue fp = r.raw().value("data_fingerprint"); !fp.isUndefined()) {
    const QString text = fp.toString();
    static const QRegularExpression hex16(QStringLiteral("^[0-9a-f]{16}$"));
    if (!fp.isString() || !hex16.match(text).hasMatch()) fail("\"data_fingerprint\" must be 16 hex digits");
    m.dataFingerprint = text.toStdString();
  }
  const Reader loader = r.object("loader");
  m.loader.epoch = loader.integer("epoch");
  m.loader.position = loader.integer("position");
  m.loader.count = loader.integer("count");
  m.loader.batchSize = loader.integer("batch_size", 1);
  const QJsonArray rng = loader.array("rng_state");
  if (rng.size() != static_cast<qsizetype>(m.loader.rng.size()))
    fail("\"loader.rng_state\" must hold " + std::to_string(m.loader.rng.size()) + " words");
  for (std::size_t i = 0; i < m.loader.rng.size(); ++i)
    m.loader.rng[i] = wordFromHex(rng[static_cast<qsizetype>(i)], "loader.rng_state[" + std::to_string(i) + "]");

  const Reader model = r.object("model");
  m.parameters = specsFromJson(model.array("parameters"), "model.parameters");
  m.buffers = specsFromJson(model.array("buffers"), "model.buffers");

  const Reader opt = r.object("optimizer");
  m.optimizerName = opt.string("name");
  const Reader scalars = opt.object("state");
  for (auto it = scalars.raw().begin(); it != scalars.raw().end(); ++it) {
    if (!it.value().isDouble()) fail("\"optimizer.state." + it.key().toStdString() + "\" must be a number");
    m.optimizerScalars[it.key().toStdString()] = it.value().toDouble();
  }
  if (!m.optimizerScalars.count("step")) fail("missing \"optimizer.state.step\"");

  const Reader entries = r.object("entries");
  for (auto it = entries.raw().begin(); it != entries.raw().end(); ++it) {
    const std::string name = it.key().toStdString();
    if (!it.value().isObject()) fail("\"entries." + name + "\" must be an object");
    const Reader e(it.value().toObject(), "entries." + name);
    EntryDigest d;
    d.sha256 = QByteArray::fromStdString(e.string("sha256")).toLower();
    // Hex digits, not just 64 bytes: other text (UTF-8 letters) was accepted, then written back
    // as Latin-1 into a manifest that no longer read (found by fuzz_checkpoint_manifest).
    const bool hex = std::all_of(d.sha256.begin(), d.sha256.end(),
                                 [](char ch) { return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'); });
    if (d.sha256.size() != 64 || !hex) fail("\"" + e.where("sha256") + "\" must be 64 hex digits");
    d.bytes = e.integer("bytes");
    m.entries[name] = d;
  }
  return m;
}

}  // namespace amp
