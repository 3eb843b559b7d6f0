#include "ui/charts/fp8_series.h"

#include <QHash>
#include <algorithm>
#include <cmath>

#include "engine/config/run_config.h"
#include "ui/run_data.h"

namespace amp::ui {

namespace {

// "fc2.x" -> ("fc2", 0); roles in the order the views list them.
std::pair<QString, int> splitTensor(const QString& tensor) {
  const int dot = tensor.lastIndexOf(QLatin1Char('.'));
  const QString role = dot >= 0 ? tensor.mid(dot + 1) : QString();
  const int order = role == QLatin1String("x") ? 0 : role == QLatin1String("w") ? 1 : role == QLatin1String("dy") ? 2 : 3;
  return {dot >= 0 ? tensor.left(dot) : tensor, order};
}

}  // namespace

int Fp8TensorSeries::indexOfStep(double s) const {
  // Steps are increasing: a binary search.
  const auto it = std::lower_bound(step.begin(), step.end(), s);
  return it != step.end() && *it == s ? int(it - step.begin()) : -1;
}

bool hasFp8Records(const RunData& run) {
  for (const StepMetrics& m : run.steps)
    if (!m.fp8.empty()) return true;
  return false;
}

QStringList fp8TensorsInModelOrder(const RunData& run) {
  QStringList layers;                 // forward order
  QHash<QString, QList<int>> roles;   // layer -> roles seen
  QHash<QString, QString> unknown;    // tensors whose role is not x / w / dy, by layer
  QStringList tensors;
  for (const StepMetrics& m : run.steps) {
    // Forward records (x, w) name the layers in model order; a layer seen only through its dy
    // (not expected) goes after them, in the order met.
    for (int pass = 0; pass < 2; ++pass)
      for (const Fp8TensorRecord& r : m.fp8) {
        const QString t = QString::fromStdString(r.tensor);
        const auto [layer, role] = splitTensor(t);
        const bool forward = role == 0 || role == 1;
        if ((pass == 0) != forward) continue;
        if (!layers.contains(layer)) layers << layer;
        if (!roles[layer].contains(role)) roles[layer] << role;
        if (role == 3) unknown.insert(layer, t);
      }
    if (!m.fp8.empty() && m.step > 1) break;  // the first two recording steps name them all
  }
  static const char* const names[] = {"x", "w", "dy"};
  for (const QString& layer : layers) {
    QList<int> rs = roles.value(layer);
    std::sort(rs.begin(), rs.end());
    for (int r : rs) tensors << (r < 3 ? layer + QLatin1Char('.') + QLatin1String(names[r]) : unknown.value(layer));
  }
  return tensors;
}

Fp8TensorSeries fp8Series(const RunData& run, const QString& tensor) {
  Fp8TensorSeries s;
  s.tensor = tensor;
  const std::string name = tensor.toStdString();
  for (const StepMetrics& m : run.steps)
    for (const Fp8TensorRecord& r : m.fp8) {
      if (r.tensor != name) continue;
      if (s.format.isEmpty()) s.format = QString::fromStdString(r.format);
      s.step << double(m.step);
      s.amax << r.amax;
      s.historyAmax << r.historyAmax;
      s.scale << r.scale;
      s.underflow << r.underflow;
      s.overflow << r.overflow;
      s.sqnrDb << r.sqnrDb;
      s.hasWhatIf = s.hasWhatIf || r.hasWhatIf;
      s.whatIfUnderflow << (r.hasWhatIf ? r.whatIfUnderflow : qQNaN());
      s.whatIfOverflow << (r.hasWhatIf ? r.whatIfOverflow : qQNaN());
      s.whatIfSqnrDb << (r.hasWhatIf ? r.whatIfSqnrDb : qQNaN());
      break;  // one record per tensor and step
    }
  return s;
}

std::optional<Fp8FormatRange> fp8FormatRange(const QString& format) {
  const QString f = format.toLower();
  // From kernels/common/minifloat.h's layouts (README's formats table).
  if (f == QLatin1String("e4m3")) return Fp8FormatRange{448, std::ldexp(1.0, -6), std::ldexp(1.0, -9), 8, -6, -9};
  if (f == QLatin1String("e5m2")) return Fp8FormatRange{57344, std::ldexp(1.0, -14), std::ldexp(1.0, -16), 15, -14, -16};
  if (f == QLatin1String("e2m1")) return Fp8FormatRange{6, 1, 0.5, 2, 0, -1};
  return std::nullopt;
}

QString fp8FormatLabel(const QString& format) { return format.toUpper(); }

Fp8Spike fp8Spike(const Fp8Config& config) {
  Fp8Spike s;
  const QString text = QString::fromStdString(config.injectSpike);
  const int a = text.indexOf(QLatin1Char(':')), b = text.lastIndexOf(QLatin1Char(':'));
  if (a < 0 || b == a) return s;
  bool ok1 = false, ok2 = false;
  const long long step = text.left(a).toLongLong(&ok1);
  const double factor = text.mid(b + 1).toDouble(&ok2);
  if (!ok1 || !ok2 || step <= 0) return s;
  return {step, text.mid(a + 1, b - a - 1), factor};
}

}  // namespace amp::ui
