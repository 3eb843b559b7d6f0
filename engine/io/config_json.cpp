#include "engine/io/config_json.h"

#include <cmath>
#include <cstdlib>

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

namespace amp {

namespace {

std::string scalarText(const std::string& key, const QJsonValue& v) {
  switch (v.type()) {
    case QJsonValue::Bool: return v.toBool() ? "true" : "false";
    case QJsonValue::Double: {
      const double d = v.toDouble();
      // Integral values print without a fraction so integer keys accept them. The range test
      // comes first: converting a double that long long cannot hold (a learning rate of 1e30)
      // is undefined behaviour, not merely a wrong number.
      if (std::abs(d) < 9e15 && d == std::trunc(d)) return std::to_string(static_cast<long long>(d));
      return QString::number(d, 'g', 17).toStdString();
    }
    case QJsonValue::String: return v.toString().toStdString();
    case QJsonValue::Array: {
      std::string s;
      for (const auto& item : v.toArray()) {
        if (item.isArray() || item.isObject())
          throw ConfigError(key + ": expected a list of numbers");
        s += (s.empty() ? "" : ",") + scalarText(key, item);
      }
      return s;
    }
    case QJsonValue::Null: throw ConfigError(key + ": expected a value, got null");
    default: throw ConfigError(key + ": unsupported value");
  }
}

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

void applyConfigJson(RunConfig& c, const QJsonObject& obj, const std::string& prefix) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string key = prefix + it.key().toStdString();
    if (it.value().isObject()) {
      applyConfigJson(c, it.value().toObject(), key + ".");
      continue;
    }
    setConfigValue(c, key, scalarText(key, it.value()));
  }
}

void applyConfigFile(RunConfig& c, const std::string& path) {
  // Only a regular file: a FIFO blocked the read forever and /dev/zero filled memory.
  const QFileInfo info(QString::fromStdString(path));
  if (info.exists() && !info.isFile()) throw ConfigError(path + ": not a regular file (a folder, device or pipe)");
  QFile f(QString::fromStdString(path));
  if (!f.open(QIODevice::ReadOnly))
    throw ConfigError(path + ": cannot open (" + f.errorString().toStdString() + ")");
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
  if (err.error != QJsonParseError::NoError)
    throw ConfigError(path + ": not valid JSON at offset " + std::to_string(err.offset) + " (" +
                      err.errorString().toStdString() + ")");
  if (!doc.isObject()) throw ConfigError(path + ": the top level must be a JSON object");
  try {
    applyConfigJson(c, doc.object());
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

QJsonObject configToJson(const RunConfig& c) {
  QJsonObject root;
  for (const auto& [key, value] : flattenConfig(c)) {
    const ConfigKey* k = findConfigKey(key);
    const QString v = QString::fromStdString(value);
    QJsonValue jv = v;
    if (k && k->type == "int") {
      // A JSON number is a double: integers beyond 2^53 (a 64-bit seed) go as their exact
      // decimal string, which the key's parser reads back (toLongLong gave 0 above 2^63).
      bool ok = false;
      const qint64 x = v.toLongLong(&ok);
      jv = ok && std::llabs(x) <= (1LL << 53) ? QJsonValue(static_cast<double>(x)) : QJsonValue(v);
    }
    else if (k && k->type == "number") jv = v.toDouble();
    else if (k && k->type == "bool") jv = v == "true";
    else if (k && k->type == "int_list") {
      QJsonArray a;
      for (const auto& part : v.split(',', Qt::SkipEmptyParts)) a.append(static_cast<double>(part.toLongLong()));
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
