#include "engine/io/fp8_json.h"

#include <QJsonObject>
#include <cmath>
#include <type_traits>

#include "engine/io/json_numbers.h"

namespace amp {

namespace {
// An exact quantisation has an SQNR of +inf: strings for inf / nan (json_numbers.h).
QJsonValue num(double v) { return jsonNumberOrText(v); }
double readNum(const QJsonValue& v) { return numberFromJson(v); }

// The block grid (fp8_record.h), compactly: the log2 figures to 1/100 (MX's exponents are whole
// numbers and stay exact), -inf for an all-zero block and nan as text (json_numbers.h).
QJsonArray log2Array(const std::vector<float>& v) {
  QJsonArray a;
  for (float x : v) a.append(std::isfinite(x) ? QJsonValue(std::round(double(x) * 100) / 100) : num(x));
  return a;
}

}  // namespace

QJsonObject fp8BlockGridToJson(const Fp8BlockGrid& g) {
  return QJsonObject{{"tensor_shape", QJsonArray{double(g.tensorRows), double(g.tensorCols)}},
                     {"block", QJsonArray{g.blockRows, g.blockCols}},
                     {"cell_blocks", QJsonArray{g.cellRows, g.cellCols}},
                     {"cells", QJsonArray{g.rows, g.cols}},
                     {"scale_format", QString::fromStdString(g.scaleFormat)},
                     {"scale_log2", log2Array(g.scaleLog2)},
                     {"amax_log2", log2Array(g.amaxLog2)}};
}

namespace {

// An inconsistent grid (sizes that do not match its cells) reads as none: the view draws nothing
// rather than a misplaced map.
Fp8BlockGrid gridFromJson(const QJsonObject& o) {
  Fp8BlockGrid g;
  const auto pair = [&](const char* key, auto& a, auto& b) {
    const QJsonArray v = o[key].toArray();
    a = static_cast<std::remove_reference_t<decltype(a)>>(v.at(0).toDouble());
    b = static_cast<std::remove_reference_t<decltype(b)>>(v.at(1).toDouble());
  };
  pair("tensor_shape", g.tensorRows, g.tensorCols);
  pair("block", g.blockRows, g.blockCols);
  pair("cell_blocks", g.cellRows, g.cellCols);
  pair("cells", g.rows, g.cols);
  g.scaleFormat = o["scale_format"].toString().toStdString();
  for (const QJsonValue& v : o["scale_log2"].toArray()) g.scaleLog2.push_back(float(readNum(v)));
  for (const QJsonValue& v : o["amax_log2"].toArray()) g.amaxLog2.push_back(float(readNum(v)));
  const std::size_t cells = g.rows > 0 && g.cols > 0 ? std::size_t(g.rows) * std::size_t(g.cols) : 0;
  if (cells == 0 || g.scaleLog2.size() != cells || g.amaxLog2.size() != cells || g.blockRows < 1 || g.blockCols < 1 ||
      g.cellRows < 1 || g.cellCols < 1)
    return {};
  return g;
}
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
    if (!r.blockGrid.empty()) o["block_grid"] = fp8BlockGridToJson(r.blockGrid);
    if (r.hasWhatIf) {
      o["what_if_underflow"] = r.whatIfUnderflow;
      o["what_if_overflow"] = r.whatIfOverflow;
      o["what_if_sqnr_db"] = num(r.whatIfSqnrDb);
    }
    if (r.hasWgradRht) {
      o["wgrad_plain_sqnr_db"] = num(r.wgradPlainSqnrDb);
      o["wgrad_plain_underflow"] = r.wgradPlainUnderflow;
      o["wgrad_rht_sqnr_db"] = num(r.wgradRhtSqnrDb);
      o["wgrad_rht_underflow"] = r.wgradRhtUnderflow;
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
    if (o.contains("block_grid")) r.blockGrid = gridFromJson(o["block_grid"].toObject());  // absent before it existed
    if (o.contains("what_if_sqnr_db")) {
      r.hasWhatIf = true;
      r.whatIfUnderflow = o["what_if_underflow"].toDouble();
      r.whatIfOverflow = o["what_if_overflow"].toDouble();
      r.whatIfSqnrDb = readNum(o["what_if_sqnr_db"]);
    }
    if (o.contains("wgrad_rht_sqnr_db")) {  // absent before it existed, and outside nvfp4
      r.hasWgradRht = true;
      r.wgradPlainSqnrDb = readNum(o["wgrad_plain_sqnr_db"]);
      r.wgradPlainUnderflow = o["wgrad_plain_underflow"].toDouble();
      r.wgradRhtSqnrDb = readNum(o["wgrad_rht_sqnr_db"]);
      r.wgradRhtUnderflow = o["wgrad_rht_underflow"].toDouble();
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace amp
