// ampstudio-cli export: a run folder's metrics as CSV or JSON.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdio>

#include "app/cli_experiment.h"

namespace amp::cli {

int cmdExport(const Args& args) {
  std::string run, format, out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UsageError(s + " needs a value");
      return args[++i];
    };
    try {
      if (s == "--help" || s == "-h") {
        std::printf("usage: ampstudio-cli export --run DIR --format csv|json [--output FILE]\n");
        return 0;
      } else if (s == "--run") run = value();
      else if (s == "--format") format = value();
      else if (s == "--output" || s == "-o") out = value();
      else throw UsageError("unknown option " + s);
    } catch (const UsageError& e) {
      std::fprintf(stderr, "ampstudio-cli export: %s\n", e.what());
      return 2;
    }
  }
  if (run.empty() || (format != "csv" && format != "json")) {
    std::fprintf(stderr, "ampstudio-cli export: needs --run DIR and --format csv|json\n");
    return 2;
  }
  QFile in(QString::fromStdString(run + "/metrics.jsonl"));
  if (!in.open(QIODevice::ReadOnly)) {
    std::fprintf(stderr, "ampstudio-cli export: %s/metrics.jsonl: cannot open\n", run.c_str());
    return 2;
  }
  QJsonArray rows;
  int line = 0;
  while (!in.atEnd()) {
    ++line;
    const QByteArray l = in.readLine().trimmed();
    if (l.isEmpty()) continue;
    QJsonParseError err;
    const auto doc = QJsonDocument::fromJson(l, &err);
    if (!doc.isObject()) {
      std::fprintf(stderr, "ampstudio-cli export: %s/metrics.jsonl:%d: not a JSON object\n", run.c_str(), line);
      return 2;
    }
    rows.append(doc.object());
  }
  QByteArray text;
  if (format == "json") {
    text = QJsonDocument(rows).toJson();
  } else {
    const char* cols[] = {"step", "epoch", "loss", "scale", "scale_after", "growth_tracker", "skipped",
                          "grad_norm", "lr", "step_ms", "samples_per_s", "test_loss", "test_acc",
                          "lost_update_frac"};
    for (std::size_t c = 0; c < std::size(cols); ++c) text += QByteArray(c ? "," : "") + cols[c];
    text += "\n";
    for (const auto& r : rows) {
      const QJsonObject o = r.toObject();
      for (std::size_t c = 0; c < std::size(cols); ++c) {
        const QJsonValue v = o[cols[c]];
        QByteArray cell = v.isBool() ? QByteArray(v.toBool() ? "1" : "0")
                          : v.isDouble() ? QByteArray::number(v.toDouble(), 'g', 10)
                                         : v.toString().toUtf8();
        text += (c ? "," : "") + cell;
      }
      text += "\n";
    }
  }
  if (out.empty()) {
    std::fwrite(text.constData(), 1, text.size(), stdout);
  } else {
    QFile f(QString::fromStdString(out));
    if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size()) {
      std::fprintf(stderr, "ampstudio-cli export: %s: cannot write\n", out.c_str());
      return 2;
    }
  }
  return 0;
}

}  // namespace amp::cli
