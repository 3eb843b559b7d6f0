#include "app/cli_report.h"

#include <QJsonArray>
#include <cstdio>

#include "engine/io/run_output.h"
#include "engine/train/event_text.h"

namespace amp::cli {

namespace {
const LabelledResult* baseline(const std::vector<LabelledResult>& runs) {
  for (const auto& r : runs)
    if (r.result.extra["mode"].toString() == "fp32") return &r;
  return nullptr;
}
double epochTime(const RunSummary& s) {
  return s.epochSeconds.empty() ? 0 : median(s.epochSeconds);
}
}  // namespace

void printComparison(const std::vector<LabelledResult>& runs, std::FILE* out) {
  const LabelledResult* base = baseline(runs);
  std::fprintf(out, "%-14s %-9s %-9s %9s %9s %10s %10s %8s %10s %10s %10s %10s %7s %7s\n", "run",
               "status", "compute", "loss", "test_acc", "ms/step", "s/epoch", "skipped", "scale", "peak_act", "peak_wts",
               "peak_tot", "speed", "memory");
  for (const auto& r : runs) {
    const RunSummary& s = r.result.summary;
    const auto& pk = s.peakMemory.peak;
    const std::int64_t wts = pk[int(MemCategory::Weights)] + pk[int(MemCategory::MasterWeights)];
    char acc[16] = "-", speed[16] = "-", mem[16] = "-", ep[16] = "-";
    if (s.finalTestAcc) std::snprintf(acc, sizeof acc, "%.2f%%", *s.finalTestAcc * 100);
    if (!s.epochSeconds.empty()) std::snprintf(ep, sizeof ep, "%.2f", epochTime(s));
    if (base) {
      const RunSummary& b = base->result.summary;
      if (s.medianStepMs > 0) std::snprintf(speed, sizeof speed, "%.2fx", b.medianStepMs / s.medianStepMs);
      if (s.peakMemory.totalPeak > 0)
        std::snprintf(mem, sizeof mem, "%.2fx", double(s.peakMemory.totalPeak) / double(b.peakMemory.totalPeak));
    }
    // "emulated" where this run's 16-bit GEMMs/convolutions run as fp32 math on this CPU.
    const QString compute = r.result.extra.value("compute").toString();
    const char* how = compute.isEmpty() ? "-" : compute.contains("emulated") ? "emulated" : "native";
    std::fprintf(out, "%-14s %-9s %-9s %9.5g %9s %10.2f %10s %8lld %10s %10s %10s %10s %7s %7s\n",
                 r.label.c_str(), s.status.c_str(), how, s.finalLoss, acc, s.medianStepMs, ep,
                 static_cast<long long>(s.skippedSteps), formatScale(s.finalScale).c_str(),
                 formatBytes(pk[int(MemCategory::Activations)]).c_str(), formatBytes(wts).c_str(),
                 formatBytes(s.peakMemory.totalPeak).c_str(), speed, mem);
  }
  if (base) std::fprintf(out, "speed = fp32 ms/step ÷ run ms/step; memory = run peak ÷ fp32 peak\n");
}

QJsonObject comparisonToJson(const std::vector<LabelledResult>& runs) {
  const LabelledResult* base = baseline(runs);
  QJsonArray arr;
  for (const auto& r : runs) {
    QJsonObject o = runSummaryToJson(r.result.summary);
    for (auto it = r.result.extra.begin(); it != r.result.extra.end(); ++it)
      if (it.key() != "model") o[it.key()] = it.value();
    o["label"] = QString::fromStdString(r.label);
    if (!r.result.summary.epochSeconds.empty()) o["median_epoch_s"] = epochTime(r.result.summary);
    if (base) {
      const RunSummary& b = base->result.summary;
      if (r.result.summary.medianStepMs > 0) o["speedup_vs_fp32"] = b.medianStepMs / r.result.summary.medianStepMs;
      if (b.peakMemory.totalPeak > 0)
        o["memory_ratio_vs_fp32"] = double(r.result.summary.peakMemory.totalPeak) / double(b.peakMemory.totalPeak);
      const auto act = int(MemCategory::Activations);
      if (b.peakMemory.peak[act] > 0)
        o["activation_ratio_vs_fp32"] = double(r.result.summary.peakMemory.peak[act]) / double(b.peakMemory.peak[act]);
    }
    arr.append(o);
  }
  QJsonObject top;
  top["runs"] = arr;
  return top;
}

}  // namespace amp::cli
