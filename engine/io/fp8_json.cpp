#include "engine/io/fp8_json.h"

#include <QJsonObject>
#include <cmath>

#include "engine/io/json_numbers.h"

namespace amp {

namespace {
// An exact quantisation has an SQNR of +inf: strings for inf / nan (json_numbers.h).
QJsonValue num(double v) { return jsonNumberOrText(v); }
double readNum(const QJsonValue& v) { return numberFromJson(v); }
}  // namespace

QJsonArray fp8RecordsToJson(const std::vector<Fp8TensorRecord>& records) {
  QJsonArray a;
  for (const Fp8TensorRecord& r : records) {
    QJsonObject o;
    o["tensor"] = QString::fromStdString(r.tensor);
    o["format"] = QString::fromStdString(r.format);
    o["amax"] = num(r.amax);
    o["scale"] = num(r.scale);
    if (!std::isnan(r.historyAmax)) o["history_amax"] = num(r.historyAmax);
    o["underflow"] = r.underflow;
    o["overflow"] = r.overflow;
    o["sqnr_db"] = num(r.sqnrDb);
    o["rel_mse"] = num(r.relMse);
    o["count"] = static_cast<double>(r.count);
    if (!r.blockExponents.empty()) {
      QJsonObject e;
      for (const auto& [exp, n] : r.blockExponents) e[QString::number(exp)] = static_cast<double>(n);
      o["block_exponents"] = e;
    }
    if (!r.scaledExponents.empty()) {
      QJsonObject e;
      for (const auto& [exp, n] : r.scaledExponents) e[QString::number(exp)] = static_cast<double>(n);
      o["scaled_exponents"] = e;
    }
    if (r.hasWhatIf) {
      o["what_if_underflow"] = r.whatIfUnderflow;
      o["what_if_overflow"] = r.whatIfOverflow;
      o["what_if_sqnr_db"] = num(r.whatIfSqnrDb);
    }
    a.append(o);
  }
  return a;
}

std::vector<Fp8TensorRecord> fp8RecordsFromJson(const QJsonArray& a) {
  std::vector<Fp8TensorRecord> out;
  for (const QJsonValue& v : a) {
    const QJsonObject o = v.toObject();
    Fp8TensorRecord r;
    r.tensor = o["tensor"].toString().toStdString();
    r.format = o["format"].toString().toStdString();
    r.amax = readNum(o["amax"]);
    r.scale = readNum(o["scale"]);
    if (o.contains("history_amax")) r.historyAmax = readNum(o["history_amax"]);
    r.underflow = o["underflow"].toDouble();
    r.overflow = o["overflow"].toDouble();
    r.sqnrDb = readNum(o["sqnr_db"]);
    r.relMse = readNum(o["rel_mse"]);
    r.count = static_cast<std::int64_t>(o["count"].toDouble());
    const QJsonObject e = o["block_exponents"].toObject();
    for (auto it = e.begin(); it != e.end(); ++it)
      r.blockExponents[it.key().toInt()] = static_cast<std::int64_t>(it.value().toDouble());
    const QJsonObject se = o["scaled_exponents"].toObject();
    for (auto it = se.begin(); it != se.end(); ++it)
      r.scaledExponents[it.key().toInt()] = static_cast<std::int64_t>(it.value().toDouble());
    if (o.contains("what_if_sqnr_db")) {
      r.hasWhatIf = true;
      r.whatIfUnderflow = o["what_if_underflow"].toDouble();
      r.whatIfOverflow = o["what_if_overflow"].toDouble();
      r.whatIfSqnrDb = readNum(o["what_if_sqnr_db"]);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace amp
