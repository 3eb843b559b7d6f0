#include "app/cli_report.h"

#include <QJsonArray>
#include <cstdio>

#include "engine/io/run_output.h"
#include "engine/train/event_text.h"
#include "engine/train/speed_turns.h"

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
double ratio(double run, double base) { return base > 0 && run > 0 ? run / base : 0; }

std::string ratioText(double r) {
  if (r <= 0) return "-";
  char b[16];
  std::snprintf(b, sizeof b, "%.2fx", r);
  return b;
}

// The second table: each run's peak memory by category and its model files (the seeds' table:
// what AMP buys in activations, checkpoints and weight files), with ratios against fp32.
void printMemoryAndFiles(const std::vector<LabelledResult>& runs, const LabelledResult* base,
                         std::FILE* out) {
  bool files = false;
  for (const auto& r : runs) files |= r.result.summary.checkpointBytes > 0;
  std::fprintf(out, "\n%-14s %10s %10s %10s %10s %10s %10s %16s %7s %7s %7s\n", "run", "activations",
               "weights", "masters", "gradients", "optimizer", "checkpoint", "weights file", "act",
               "ckpt", "file");
  for (const auto& r : runs) {
    const RunSummary& s = r.result.summary;
    const auto& pk = s.peakMemory.peak;
    auto cat = [&](MemCategory c) { return formatBytes(pk[int(c)]); };
    std::string file = "-", ckpt = "-";
    if (s.weightsBytes > 0) file = formatBytes(s.weightsBytes) + " " + s.weightsDtype;
    if (s.checkpointBytes > 0) ckpt = formatBytes(s.checkpointBytes);
    double act = 0, ck = 0, wf = 0;
    if (base) {
      const RunSummary& b = base->result.summary;
      act = ratio(double(pk[int(MemCategory::Activations)]), double(b.peakMemory.peak[int(MemCategory::Activations)]));
      ck = ratio(double(s.checkpointBytes), double(b.checkpointBytes));
      wf = ratio(double(s.weightsBytes), double(b.weightsBytes));
    }
    std::fprintf(out, "%-14s %10s %10s %10s %10s %10s %10s %16s %7s %7s %7s\n", r.label.c_str(),
                 cat(MemCategory::Activations).c_str(), cat(MemCategory::Weights).c_str(),
                 cat(MemCategory::MasterWeights).c_str(), cat(MemCategory::Gradients).c_str(),
                 cat(MemCategory::OptimizerState).c_str(), ckpt.c_str(), file.c_str(),
                 ratioText(act).c_str(), ratioText(ck).c_str(), ratioText(wf).c_str());
  }
  std::fprintf(out, "peak bytes by category; checkpoint = the resumable zip (fp32 masters, optimizer "
                    "state, metrics);\nweights file = the weights alone in the run's compute dtype "
                    "(export --weights); ratios against fp32%s\n",
               files ? "" : " (model files are measured by compare, or with checkpoint.at_end=true)");
}

// Variants that trained in turns (cli_run.cpp): their speed against fp32's round by round of
// blocks, and whether the rounds agree enough to say anything (engine/train/speed_turns.h).
PairedSpeed pairedAgainst(const LabelledResult& r, const LabelledResult& base) {
  return pairedSpeed(base.result.stepMs, r.result.stepMs, r.result.turnBlockSteps);
}

bool trainedInTurns(const LabelledResult& r, const LabelledResult* base) {
  return base && &r != base && r.result.turnBlockSteps > 0 &&
         r.result.turnBlockSteps == base->result.turnBlockSteps;
}

void printPairedSpeed(const std::vector<LabelledResult>& runs, const LabelledResult* base, std::FILE* out) {
  bool header = false;
  for (const auto& r : runs) {
    if (!trainedInTurns(r, base)) continue;
    if (!header)
      std::fprintf(out, "trained in turns, %d step(s) a turn; speed against fp32 round by round (median, quartiles):\n",
                   r.result.turnBlockSteps);
    header = true;
    const PairedSpeed p = pairedAgainst(r, *base);
    std::fprintf(out, "  %-14s %.2fx (%.2fx-%.2fx over %d rounds)%s\n", r.label.c_str(), p.ratio, p.low, p.high,
                 p.rounds, p.noisy ? ": too noisy to conclude" : "");
  }
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
  printPairedSpeed(runs, base, out);
  printMemoryAndFiles(runs, base, out);
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
      if (trainedInTurns(r, base)) {
        const PairedSpeed p = pairedAgainst(r, *base);
        QJsonObject paired;
        paired["turn_steps"] = r.result.turnBlockSteps;
        paired["rounds"] = p.rounds;
        paired["speedup"] = p.ratio;
        paired["low"] = p.low;
        paired["high"] = p.high;
        paired["too_noisy"] = p.noisy;
        o["paired_speed_vs_fp32"] = paired;
      }
      if (b.peakMemory.totalPeak > 0)
        o["memory_ratio_vs_fp32"] = double(r.result.summary.peakMemory.totalPeak) / double(b.peakMemory.totalPeak);
      const auto act = int(MemCategory::Activations);
      if (b.peakMemory.peak[act] > 0)
        o["activation_ratio_vs_fp32"] = double(r.result.summary.peakMemory.peak[act]) / double(b.peakMemory.peak[act]);
      if (const double ck = ratio(double(r.result.summary.checkpointBytes), double(b.checkpointBytes)))
        o["checkpoint_ratio_vs_fp32"] = ck;
      if (const double wf = ratio(double(r.result.summary.weightsBytes), double(b.weightsBytes)))
        o["weights_file_ratio_vs_fp32"] = wf;
    }
    arr.append(o);
  }
  QJsonObject top;
  top["runs"] = arr;
  return top;
}

}  // namespace amp::cli
