#include "engine/io/tensorboard_import.h"

#include <QDir>
#include <QDirIterator>
#include <QJsonArray>
#include <QJsonDocument>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include "engine/io/config_json.h"
#include "engine/io/metrics_json.h"
#include "engine/io/proto/tensorboard_event.pb.h"
#include "engine/io/tensorboard_export.h"
#include "engine/io/tfevents_records.h"
#include "kernels/common/float16.h"

namespace amp {

namespace {

[[noreturn]] void fail(const std::string& what) { throw RunRecordError(what); }

// The usual spellings of what the charts show, lower case (TensorBoard tags are free text:
// PyTorch examples write "Loss/train", Lightning "train_loss", Hugging Face "train/loss").
enum class Field { Loss, Scale, ScaleAfter, GrowthTracker, Skipped, GradNorm, Lr, StepMs, SamplesPerS,
                   TestLoss, TestAcc, LostUpdates, Ignored };

std::optional<Field> fieldOfTag(const std::string& tag) {
  static const std::map<std::string, Field> aliases = {
      {"loss", Field::Loss}, {"train/loss", Field::Loss}, {"train_loss", Field::Loss},
      {"loss/train", Field::Loss}, {"training_loss", Field::Loss}, {"train/loss_step", Field::Loss},
      {"amp/loss_scale", Field::Scale}, {"loss_scale", Field::Scale}, {"scale", Field::Scale},
      {"grad_scale", Field::Scale}, {"scaler/scale", Field::Scale}, {"train/loss_scale", Field::Scale},
      {"amp/scale", Field::Scale}, {"amp/grad_scale", Field::Scale}, {"grad_scaler/scale", Field::Scale},
      {"amp/loss_scale_after", Field::ScaleAfter}, {"amp/growth_tracker", Field::GrowthTracker},
      {"amp/skipped", Field::Skipped}, {"skipped", Field::Skipped}, {"train/skipped", Field::Skipped},
      {"train/grad_norm", Field::GradNorm}, {"grad_norm", Field::GradNorm}, {"gradient_norm", Field::GradNorm},
      {"train/lr", Field::Lr}, {"lr", Field::Lr}, {"learning_rate", Field::Lr}, {"train/learning_rate", Field::Lr},
      {"speed/step_ms", Field::StepMs}, {"step_ms", Field::StepMs},
      {"speed/samples_per_s", Field::SamplesPerS}, {"samples_per_s", Field::SamplesPerS},
      {"throughput", Field::SamplesPerS},
      {"test/loss", Field::TestLoss}, {"val/loss", Field::TestLoss}, {"val_loss", Field::TestLoss},
      {"loss/test", Field::TestLoss}, {"eval/loss", Field::TestLoss}, {"valid/loss", Field::TestLoss},
      {"test_loss", Field::TestLoss},
      {"test/accuracy", Field::TestAcc}, {"test/acc", Field::TestAcc}, {"val/acc", Field::TestAcc},
      {"val_acc", Field::TestAcc}, {"val/accuracy", Field::TestAcc}, {"eval/accuracy", Field::TestAcc},
      {"accuracy/test", Field::TestAcc}, {"test_acc", Field::TestAcc}, {"test_accuracy", Field::TestAcc},
      {"amp/lost_update_frac", Field::LostUpdates},
      // Our export's other scalars: the ampstudio/metrics lines carry them exactly.
      {"speed/gemm_gflops", Field::Ignored}};
  std::string lower = tag;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (auto it = aliases.find(lower); it != aliases.end()) return it->second;
  if (lower.rfind("memory/", 0) == 0 || lower.rfind("memory_peak/", 0) == 0) return Field::Ignored;
  return std::nullopt;
}

std::int64_t elementCount(const tb::TensorProto& t) {
  std::int64_t n = 1;
  for (const auto& d : t.tensor_shape().dim()) n *= std::max<std::int64_t>(0, d.size());
  return n;
}

// The i-th element of a numeric tensor, from its typed list or its raw little-endian bytes.
std::optional<double> tensorElement(const tb::TensorProto& t, int i) {
  const std::string& raw = t.tensor_content();
  auto fromRaw = [&](std::size_t width) -> std::optional<std::uint64_t> {
    if (raw.size() < (std::size_t(i) + 1) * width) return std::nullopt;
    std::uint64_t bits = 0;
    std::memcpy(&bits, raw.data() + std::size_t(i) * width, width);
    return bits;
  };
  switch (t.dtype()) {
    case tb::DT_FLOAT:
      if (i < t.float_val_size()) return t.float_val(i);
      if (auto b = fromRaw(4)) return bitsToFloat(static_cast<std::uint32_t>(*b));
      return std::nullopt;
    case tb::DT_DOUBLE:
      if (i < t.double_val_size()) return t.double_val(i);
      if (auto b = fromRaw(8)) {
        double d;
        std::memcpy(&d, &*b, 8);
        return d;
      }
      return std::nullopt;
    case tb::DT_HALF:
      if (i < t.half_val_size()) return halfBitsToFloat(static_cast<std::uint16_t>(t.half_val(i)));
      if (auto b = fromRaw(2)) return halfBitsToFloat(static_cast<std::uint16_t>(*b));
      return std::nullopt;
    case tb::DT_BFLOAT16:
      if (i < t.half_val_size()) return bf16BitsToFloat(static_cast<std::uint16_t>(t.half_val(i)));
      if (auto b = fromRaw(2)) return bf16BitsToFloat(static_cast<std::uint16_t>(*b));
      return std::nullopt;
    case tb::DT_INT32:
      if (i < t.int_val_size()) return t.int_val(i);
      return std::nullopt;
    case tb::DT_INT64:
      if (i < t.int64_val_size()) return static_cast<double>(t.int64_val(i));
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<double> scalarOf(const tb::Summary::Value& v) {
  if (v.value_case() == tb::Summary::Value::kSimpleValue) return v.simple_value();
  if (v.value_case() == tb::Summary::Value::kTensor && elementCount(v.tensor()) == 1)
    return tensorElement(v.tensor(), 0);
  return std::nullopt;
}

std::optional<std::string> stringOf(const tb::Summary::Value& v) {
  if (v.value_case() != tb::Summary::Value::kTensor) return std::nullopt;
  const tb::TensorProto& t = v.tensor();
  if (t.dtype() != tb::DT_STRING || t.string_val_size() != 1) return std::nullopt;
  return t.string_val(0);
}

struct Bucket {
  double left, right, count;
};

// A histogram's buckets: TensorBoard's HistogramProto (PyTorch's SummaryWriter, TF1), or a
// [k, 3] tensor of (left, right, count) rows (TF2's histogram plugin).
std::optional<std::vector<Bucket>> bucketsOf(const tb::Summary::Value& v) {
  std::vector<Bucket> out;
  if (v.value_case() == tb::Summary::Value::kHisto) {
    const tb::HistogramProto& h = v.histo();
    if (h.bucket_limit_size() != h.bucket_size()) return std::nullopt;
    for (int i = 0; i < h.bucket_size(); ++i) {
      const double left = i == 0 ? h.min() : h.bucket_limit(i - 1);
      const double right = std::min(h.bucket_limit(i), h.max());
      out.push_back({left, std::max(left, right), h.bucket(i)});
    }
    return out;
  }
  if (v.value_case() == tb::Summary::Value::kTensor && v.metadata().plugin_data().plugin_name() == "histograms") {
    const tb::TensorProto& t = v.tensor();
    if (t.tensor_shape().dim_size() != 2 || t.tensor_shape().dim(1).size() != 3) return std::nullopt;
    const std::int64_t rows = t.tensor_shape().dim(0).size();
    if (rows < 0 || rows > 100000) return std::nullopt;
    for (int r = 0; r < rows; ++r) {
      auto l = tensorElement(t, 3 * r), h = tensorElement(t, 3 * r + 1), c = tensorElement(t, 3 * r + 2);
      if (!l || !h || !c) return std::nullopt;
      out.push_back({*l, *h, *c});
    }
    return out;
  }
  return std::nullopt;
}

// Value buckets re-binned by binary exponent: each bucket's count goes to the bin of its centre
// (a bucket narrower than a binade lands whole in the right bin; a wider one is approximated).
HistogramRecord rebinned(const std::string& tag, const std::vector<Bucket>& buckets) {
  HistogramRecord h;
  h.tensor = tag;
  std::string lower = tag;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  // TensorBoard's usual names: "fc1.weight.grad" / "grad/fc1.weight", "fc1.weight", "relu1".
  const bool parameter = lower.find("weight") != std::string::npos || lower.find("bias") != std::string::npos;
  h.kind = lower.find("grad") != std::string::npos ? HistogramKind::WeightGrad
           : parameter                               ? HistogramKind::Weight
                                                     : HistogramKind::Activation;
  for (const Bucket& b : buckets) {
    if (!(b.count > 0) || !std::isfinite(b.count)) continue;
    const double centre = std::isfinite(b.left) && std::isfinite(b.right) ? (b.left + b.right) / 2
                          : std::isfinite(b.right) ? b.right : b.left;
    const auto n = static_cast<std::int64_t>(std::llround(std::min(b.count, 9.0e15)));
    for (ExponentHistogram* side : {&h.scaled, &h.unscaled}) {
      side->counts[exponentBin(centre)] += n;
      side->total += n;
      const double a = std::fabs(centre);
      if (a != 0 && a < kFp16MinSubnormal) side->underflow += n;
      if (a != 0 && a < kFp16MinNormal) side->subnormal += n;
      if (a > kFp16Max) side->overflow += n;
      if (!std::isfinite(centre)) side->nonFinite += n;
    }
  }
  return h;
}

QJsonObject jsonObjectOf(const std::string& text, const std::string& where) {
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(text), &err);
  if (err.error != QJsonParseError::NoError || !doc.isObject())
    fail(where + ": not a JSON object (" + err.errorString().toStdString() + ")");
  return doc.object();
}

// What the events of one run said, before it becomes a RunRecord.
struct Collected {
  std::map<std::int64_t, StepMetrics> scalars;            // from tags, by step
  std::map<std::int64_t, std::set<Field>> seen;           // which fields each step had
  std::map<std::int64_t, double> wallTime;                // first event of each step
  std::vector<StepMetrics> exact;                         // ampstudio/metrics lines
  std::vector<std::pair<std::int64_t, HistogramRecord>> exactHistograms, foreignHistograms;
  std::optional<QJsonObject> config, summary;
  std::optional<QString> events;
  std::map<std::string, QJsonArray> unknown;              // tag -> [[step, value], ...]
  QStringList warnings;
};

void setField(StepMetrics& m, Field f, double v) {
  switch (f) {
    case Field::Loss: m.loss = v; break;
    case Field::Scale: m.scale = static_cast<float>(v); break;
    case Field::ScaleAfter: m.scaleAfter = static_cast<float>(v); break;
    case Field::GrowthTracker: m.growthTracker = static_cast<int>(std::clamp(v, -1e9, 1e9)); break;
    case Field::Skipped: m.skipped = v != 0; break;
    case Field::GradNorm: m.gradNorm = v; break;
    case Field::Lr: m.lr = v; break;
    case Field::StepMs: m.stepMs = v; break;
    case Field::SamplesPerS: m.samplesPerS = v; break;
    case Field::TestLoss: m.testLoss = v; break;
    case Field::TestAcc: m.testAcc = v; break;
    case Field::LostUpdates: m.lostUpdateFrac = v; break;
    case Field::Ignored: break;
  }
}

void collectValue(Collected& c, const tb::Summary::Value& v, std::int64_t step, double wall, const std::string& where) {
  const std::string& tag = v.tag();
  const std::string at = where + ": tag '" + tag + "'";
  try {
    if (tag == tbtag::kMetrics) {
      if (auto s = stringOf(v)) return c.exact.push_back(stepMetricsFromJson(jsonObjectOf(*s, at)));
    } else if (tag.rfind(tbtag::kHistogramPrefix, 0) == 0) {
      if (auto s = stringOf(v)) {
        const QJsonObject o = jsonObjectOf(*s, at);
        return void(c.exactHistograms.emplace_back(o["step"].toInteger(step), histogramFromJson(o)));
      }
    } else if (tag == tbtag::kConfig) {
      if (auto s = stringOf(v)) return void(c.config = jsonObjectOf(*s, at));
    } else if (tag == tbtag::kSummary) {
      if (auto s = stringOf(v)) return void(c.summary = jsonObjectOf(*s, at));
    } else if (tag == tbtag::kEvents) {
      if (auto s = stringOf(v)) return void(c.events = QString::fromStdString(*s));
    }
  } catch (const RunRecordError& e) {
    fail(at + ": " + e.what());
  }
  if (tag.rfind(tbtag::kExponentsUnscaled, 0) == 0 || tag.rfind(tbtag::kExponentsScaled, 0) == 0)
    return;  // our own exponent views: the ampstudio/histogram lines hold the same counts exactly
  if (auto x = scalarOf(v)) {
    if (auto f = fieldOfTag(tag)) {
      StepMetrics& m = c.scalars[step];
      m.step = step;
      setField(m, *f, *x);
      c.seen[step].insert(*f);
      c.wallTime.emplace(step, wall);
      return;
    }
    c.unknown[tag].append(QJsonArray{static_cast<double>(step), std::isfinite(*x) ? QJsonValue(*x) : QJsonValue(QString::number(*x))});
    return;
  }
  if (auto b = bucketsOf(v)) return void(c.foreignHistograms.emplace_back(step, rebinned(tag, *b)));
  c.unknown[tag];  // an image, audio, text or other tensor: listed, with no values to keep
}

void collectFile(Collected& c, const QString& name, const std::string& bytes) {
  const std::string file = name.toStdString();
  const tfevents::SplitResult split = [&] {
    try {
      return tfevents::splitRecords(bytes, file);
    } catch (const tfevents::RecordError& e) {
      throw RunRecordError(e.what());
    }
  }();
  if (!split.truncatedTail.empty()) c.warnings << QString::fromStdString(split.truncatedTail);
  for (const tfevents::Record& rec : split.records) {
    const std::string where = file + ": record " + std::to_string(rec.index) + " (offset " + std::to_string(rec.offset) + ")";
    tb::Event e;
    if (!e.ParseFromArray(rec.data.data(), static_cast<int>(rec.data.size())))
      fail(where + ": not a TensorBoard Event message");
    if (e.what_case() == tb::Event::kFileVersion) {
      const std::string& v = e.file_version();
      if (v.rfind("brain.Event:", 0) != 0)
        fail(where + ": file_version '" + v + "' is not a TensorBoard event file's");
      const std::string n = v.substr(12);
      if (n != "1" && n != "2")
        fail(where + ": file_version '" + v + "' is newer than this AMP Studio reads (brain.Event:1 or 2)");
      continue;
    }
    if (e.what_case() != tb::Event::kSummary) continue;  // graphs, session logs: nothing to chart
    for (const tb::Summary::Value& v : e.summary().value()) collectValue(c, v, e.step(), e.wall_time(), where);
  }
}

// Steps from scalar tags: the scale after a step is the next step's scale, and a scale that fell
// is a skipped step (GradScaler backs off exactly when it skips); the step time, when no tag
// gives it, is the wall time between two logged steps over the steps between them.
std::vector<StepMetrics> stepsFromScalars(Collected& c) {
  std::vector<StepMetrics> steps;
  for (auto& [step, m] : c.scalars) {
    const auto& seen = c.seen[step];
    if (!seen.count(Field::Scale)) m.scale = 1;
    steps.push_back(m);
  }
  bool percent = false;
  for (const StepMetrics& m : steps)
    if (m.testAcc && *m.testAcc > 1) percent = true;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    StepMetrics& m = steps[i];
    const auto& seen = c.seen[m.step];
    if (!seen.count(Field::ScaleAfter)) m.scaleAfter = i + 1 < steps.size() ? steps[i + 1].scale : m.scale;
    if (!seen.count(Field::Skipped)) m.skipped = m.scaleAfter < m.scale;
    if (m.scaleAfter < m.scale) m.scaleEvent = "backoff";
    else if (m.scaleAfter > m.scale) m.scaleEvent = "growth";
    if (!seen.count(Field::StepMs) && i > 0 && c.wallTime.count(m.step) && c.wallTime.count(steps[i - 1].step)) {
      const double dt = c.wallTime[m.step] - c.wallTime[steps[i - 1].step];
      const double ds = double(m.step - steps[i - 1].step);
      if (dt > 0 && ds > 0) m.stepMs = dt / ds * 1e3;
    }
    if (percent && m.testAcc) *m.testAcc /= 100;
  }
  if (percent) c.warnings << QStringLiteral("test accuracy was logged in percent: shown as a fraction");
  return steps;
}

RunConfig externalConfig(const QString& runName, bool scaled, std::int64_t steps) {
  RunConfig cfg;
  cfg.name = runName.toStdString();
  cfg.model.name = "external";
  cfg.data.name = "external";
  // TensorBoard logs do not say the precision; a logged loss scale means fp16 with GradScaler.
  cfg.mode = scaled ? PrecisionMode::AmpFp16 : PrecisionMode::Fp32;
  cfg.scalerEnabled = scaled ? "true" : "false";
  cfg.train.steps = std::max<std::int64_t>(1, steps);
  cfg.train.histogramEvery = 0;
  return cfg;
}

}  // namespace

bool isTensorBoardFolder(const QString& dir) {
  QDirIterator it(dir, {QStringLiteral("*tfevents*")}, QDir::Files, QDirIterator::Subdirectories);
  return it.hasNext();
}

RunRecord tensorBoardRunFromFiles(const std::map<QString, std::string>& files, const QString& where,
                                  const QString& runName) {
  Collected c;
  for (const auto& [name, bytes] : files) collectFile(c, where + name, bytes);
  RunRecord r;
  r.warnings = c.warnings;
  if (c.config) {
    try {
      applyConfigJson(r.config, *c.config);
    } catch (const ConfigError& e) {
      fail((where + "(" + tbtag::kConfig + "): ").toStdString() + e.what());
    }
  }
  const bool ours = !c.exact.empty();
  if (ours) {
    std::sort(c.exact.begin(), c.exact.end(), [](const StepMetrics& a, const StepMetrics& b) { return a.step < b.step; });
    r.steps = std::move(c.exact);
  } else {
    r.steps = stepsFromScalars(c);
  }
  if (!c.config) {
    bool scaled = false;
    for (const auto& [step, seen] : c.seen) scaled = scaled || seen.count(Field::Scale);
    r.config = externalConfig(runName, scaled, r.steps.empty() ? 0 : r.steps.back().step);
    r.warnings << QStringLiteral("%1: precision not in the log: shown as %2").arg(where, scaled ? "fp16 (a loss scale was logged)" : "fp32");
  }
  r.histograms = std::move(c.exactHistograms);
  for (auto& h : c.foreignHistograms) r.histograms.push_back(std::move(h));
  if (c.summary) r.summary = *c.summary;
  r.name = r.summary.contains("name") ? r.summary["name"].toString() : runName;
  r.status = r.summary.contains("status") ? r.summary["status"].toString() : QStringLiteral("finished");
  if (c.events) r.events = c.events->split('\n', Qt::SkipEmptyParts);
  if (!ours) {
    r.summary["source"] = QJsonObject{{"kind", "tensorboard"}, {"folder", where}};
    r.events << QStringLiteral("imported from TensorBoard logs in %1").arg(where);
    if (!c.foreignHistograms.empty())
      r.events << QStringLiteral("%1 histograms re-binned by binary exponent from TensorBoard's buckets (each bucket at its centre)")
                      .arg(c.foreignHistograms.size());
  }
  if (!c.unknown.empty()) {
    QStringList tags;
    QJsonObject kept;
    for (const auto& [tag, values] : c.unknown) {
      tags << QString::fromStdString(tag);
      kept[QString::fromStdString(tag)] = values;
    }
    r.summary["imported_scalars"] = kept;
    const QString line = QStringLiteral("%1 TensorBoard tags not in AMP Studio's charts (kept in summary.json as imported_scalars): %2")
                             .arg(tags.size()).arg(tags.join(", "));
    r.events << line;
    r.warnings << where + ": " + line;
  }
  if (r.steps.empty()) fail((where + ": no scalar of a training step (loss, loss scale, ...) in its event files").toStdString());
  return r;
}

std::vector<RunRecord> loadTensorBoardFolder(const QString& dir) {
  std::map<QString, std::map<QString, std::string>> runs;  // folder below dir -> file -> bytes
  QDirIterator it(dir, {QStringLiteral("*tfevents*")}, QDir::Files, QDirIterator::Subdirectories);
  const QDir root(dir);
  while (it.hasNext()) {
    const QString path = it.next();
    const QString folder = root.relativeFilePath(QFileInfo(path).path());
    runs[folder][QFileInfo(path).fileName()] = readFileBytes(path).toStdString();
  }
  if (runs.empty()) fail((dir + ": no TensorBoard event files (events.out.tfevents.*)").toStdString());
  std::vector<RunRecord> out;
  for (const auto& [folder, files] : runs) {
    const QString where = QDir::cleanPath(root.filePath(folder)) + "/";
    const QString name = folder == "." ? QFileInfo(QDir::cleanPath(dir)).fileName() : folder;
    out.push_back(tensorBoardRunFromFiles(files, where, name));
  }
  return out;
}

std::vector<RunRecord> loadRunsOrTensorBoard(const QString& dir) {
  const QStringList subs = QDir(dir).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
  const bool hasRuns = isRunFolder(dir) || std::any_of(subs.begin(), subs.end(), [&](const QString& s) {
                         return isRunFolder(QDir(dir).filePath(s));
                       });
  return !hasRuns && isTensorBoardFolder(dir) ? loadTensorBoardFolder(dir) : loadRunFolders(dir);
}

}  // namespace amp
