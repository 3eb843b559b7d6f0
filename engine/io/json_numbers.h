// Numbers in AMP Studio's JSON files: JSON has no inf or nan, so they are written as the strings
// "inf", "-inf" and "nan" (a reader then sees what happened) and read back from them.
#pragma once

#include <QJsonValue>
#include <QString>
#include <cmath>

namespace amp {

inline QJsonValue jsonNumberOrText(double v) {
  if (std::isnan(v)) return QStringLiteral("nan");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  return v;
}

inline double numberFromJson(const QJsonValue& v) {
  if (v.isString()) {
    const QString s = v.toString();
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  return v.toDouble();
}

}  // namespace amp
