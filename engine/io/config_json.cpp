#include "engine/io/config_json.h"

#include <cmath>
#include <cstdlib>

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

namespace amp {

namespace {

// An integer literal as JSON writes one ("-12", "18446744073709551615"): such text goes to the
// key's parser as written, never through a double.
bool integerLiteral(const std::string& t) {
  const std::size_t start = !t.empty() && t[0] == '-' ? 1 : 0;
  if (t.size() == start) return false;
  for (std::size_t i = start; i < t.size(); ++i)
    if (t[i] < '0' || t[i] > '9') return false;
  return true;
}

std::string scalarText(const std::string& key, const QJsonValue& v, const JsonNumberTexts* texts = nullptr) {
  switch (v.type()) {
    case QJsonValue::Bool: return v.toBool() ? "true" : "false";
    case QJsonValue::Double: {
      if (texts) {
        const auto it = texts->scalars.find(key);
        if (it != texts->scalars.end() && integerLiteral(it->second)) return it->second;
      }
      const double d = v.toDouble();
      // Integral values print without a fraction so integer keys accept them. The range is
      // checked before the cast: converting 1e300 or nan to long long is undefined (the fuzzer's
      // first find). -0 keeps its sign, as a number key given "-0" does.
      if (d == 0) return std::signbit(d) ? "-0" : "0";
      if (std::abs(d) < 9e15 && d == std::trunc(d)) return std::to_string(static_cast<long long>(d));
      return QString::number(d, 'g', 17).toStdString();
    }
    case QJsonValue::String: return v.toString().toStdString();
    case QJsonValue::Array: {
      std::string s;
      const QJsonArray items = v.toArray();
      const std::vector<std::string>* written = nullptr;
      if (texts) {
        const auto it = texts->lists.find(key);
        if (it != texts->lists.end() && it->second.size() == std::size_t(items.size())) written = &it->second;
      }
      for (qsizetype i = 0; i < items.size(); ++i) {
        const QJsonValue item = items.at(i);
        if (item.isArray() || item.isObject())
          throw ConfigError(key + ": expected a list of numbers");
        const bool asWritten = written && item.isDouble() && integerLiteral((*written)[std::size_t(i)]);
        s += (s.empty() ? "" : ",") + (asWritten ? (*written)[std::size_t(i)] : scalarText(key, item));
      }
      return s;
    }
    case QJsonValue::Null: throw ConfigError(key + ": expected a value, got null");
    default: throw ConfigError(key + ": unsupported value");
  }
}

// Whether a JSON number (a double) holds x exactly. (Not llabs: llabs(INT64_MIN) overflows.)
bool exactInDouble(qint64 x) { return x >= -(1LL << 53) && x <= (1LL << 53); }

void setNested(QJsonObject& root, const QString& dotted, const QJsonValue& v) {
  const int dot = dotted.indexOf('.');
  if (dot < 0) {
    root[dotted] = v;
    return;
  }
  const QString head = dotted.left(dot);
  QJsonObject child = root[head].toObject();
  setNested(child, dotted.mid(dot + 1), v);
  root[head] = child;
}

}  // namespace

void applyConfigJson(RunConfig& c, const QJsonObject& obj, const std::string& prefix,
                     const JsonNumberTexts* texts) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string key = prefix + it.key().toStdString();
    if (key == "format_version") {
      const double v = it.value().toDouble(-1);
      if (!it.value().isDouble() || v != std::trunc(v) || v < 1)
        throw ConfigError("format_version: expected a whole number >= 1");
      if (v > kRunFormatVersion)
        throw ConfigError("format_version " + QString::number(v, 'g', 17).toStdString() +
                          " is newer than this AMP Studio reads (" + std::to_string(kRunFormatVersion) +
                          "): open it with a newer AMP Studio");
      continue;
    }
    if (it.value().isObject()) {
      applyConfigJson(c, it.value().toObject(), key + ".", texts);
      continue;
    }
    setConfigValue(c, key, scalarText(key, it.value(), texts));
  }
}

void applyConfigFile(RunConfig& c, const std::string& path) {
  // Only a regular file: a FIFO blocked the read forever and /dev/zero filled memory.
  const QFileInfo info(QString::fromStdString(path));
  if (info.exists() && !info.isFile()) throw ConfigError(path + ": not a regular file (a folder, device or pipe)");
  // A config is a page of keys; a file of hundreds of megabytes is a mistake to refuse before
  // reading it (Qt's parser then needs several times its size).
  constexpr qint64 kMaxConfigBytes = qint64{16} << 20;
  if (info.exists() && info.size() > kMaxConfigBytes)
    throw ConfigError(path + ": " + std::to_string(info.size()) + " bytes; a config file is at most " +
                      std::to_string(kMaxConfigBytes >> 20) + " MiB");
  QFile f(QString::fromStdString(path));
  if (!f.open(QIODevice::ReadOnly))
    throw ConfigError(path + ": cannot open (" + f.errorString().toStdString() + ")");
  QJsonParseError err;
  const QByteArray bytes = f.readAll();
  const QJsonDocument doc = QJsonDocument::fromJson(bytes, &err);
  if (err.error != QJsonParseError::NoError)
    throw ConfigError(path + ": not valid JSON at offset " + std::to_string(err.offset) + " (" +
                      err.errorString().toStdString() + ")");
  if (!doc.isObject()) throw ConfigError(path + ": the top level must be a JSON object");
  try {
    // Numbers as written and keys given twice, which the parsed document no longer shows.
    const JsonNumberTexts texts = scanJsonNumbers(std::string_view(bytes.constData(), std::size_t(bytes.size())));
    applyConfigJson(c, doc.object(), "", &texts);
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

QJsonObject configToJson(const RunConfig& c) {
  QJsonObject root;
  root["format_version"] = kRunFormatVersion;
  for (const auto& [key, value] : flattenConfig(c)) {
    const ConfigKey* k = findConfigKey(key);
    const QString v = QString::fromStdString(value);
    QJsonValue jv = v;
    if (k && k->type == "int") {
      // A JSON number is a double: integers beyond 2^53 (a 64-bit seed) go as their exact
      // decimal string, which the key's parser reads back (toLongLong gave 0 above 2^63).
      bool ok = false;
      const qint64 x = v.toLongLong(&ok);
      jv = ok && exactInDouble(x) ? QJsonValue(static_cast<double>(x)) : QJsonValue(v);
    }
    else if (k && k->type == "number") {
      // JSON has no inf or nan (Qt writes null), and QJsonValue stores -0 as the integer 0: those
      // go as the key's text, which scalarText and the key's parser read back exactly.
      const double d = v.toDouble();
      jv = std::isfinite(d) && !(d == 0 && std::signbit(d)) ? QJsonValue(d) : QJsonValue(v);
    }
    else if (k && k->type == "bool") jv = v == "true";
    else if (k && k->type == "int_list") {
      QJsonArray a;
      // Items beyond 2^53 go as exact decimal strings, as whole integers do above (a double
      // would round model.hidden=9007199254740993 to ...992).
      for (const auto& part : v.split(',', Qt::SkipEmptyParts)) {
        const qint64 x = part.toLongLong();
        a.append(exactInDouble(x) ? QJsonValue(static_cast<double>(x)) : QJsonValue(part));
      }
      jv = a;
    }
    if (key.rfind("autocast.", 0) == 0) {
      QJsonObject ac = root["autocast"].toObject();
      ac[QString::fromStdString(key.substr(9))] = v;  // op names may contain dots? they do not
      root["autocast"] = ac;
      continue;
    }
    setNested(root, QString::fromStdString(key), jv);
  }
  return root;
}

}  // namespace amp
