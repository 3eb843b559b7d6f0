// metrics.jsonl and histograms.jsonl lines: stepMetricsFromJsonLines on the whole input, then
// each line as a step (stepMetricsFromJson) and as a histogram (histogramFromJson, which refuses
// with RunRecordError). Writing back what was read must be stable: a step or histogram read,
// written and read again writes the same line again (the app re-saves runs it opened).
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdint>
#include <string>

#include "engine/io/metrics_json.h"
#include "engine/io/run_record.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

QByteArray compact(const QJsonObject& o) { return QJsonDocument(o).toJson(QJsonDocument::Compact); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amp;
  const QByteArray text = fuzz::bytesOf(data, size);
  (void)stepMetricsFromJsonLines(text);
  for (const QByteArray& line : text.split('\n')) {
    const QJsonObject o = QJsonDocument::fromJson(line).object();
    if (o.isEmpty()) continue;
    const QByteArray once = stepMetricsJsonLine(stepMetricsFromJson(o));
    const QByteArray twice = stepMetricsJsonLine(stepMetricsFromJson(QJsonDocument::fromJson(once).object()));
    if (once != twice) fuzz::fail("step changed when written back:\n" + once.toStdString() + twice.toStdString());
    HistogramRecord h;
    try {
      h = histogramFromJson(o);
    } catch (const RunRecordError& e) {
      fuzz::refused(e);
      continue;
    }
    const QByteArray first = compact(histogramToJson(0, h));
    QByteArray again;
    try {
      again = compact(histogramToJson(0, histogramFromJson(QJsonDocument::fromJson(first).object())));
    } catch (const RunRecordError& e) {
      fuzz::fail(std::string("histogramFromJson refuses what histogramToJson wrote: ") + e.what() + "\n" +
                 first.toStdString());
    }
    if (first != again) fuzz::fail("histogram changed when written back:\n" + first.toStdString() + "\n" + again.toStdString());
  }
  return 0;
}
