// ampstudio-gpu-bench: `ampstudio-cli bench` without Qt, for the GPU machine (which has no Qt):
// the PyTorch AMP recipe in fp32, fp16 and bf16 on one backend (median step by CUDA events, total
// time, GEMM TFLOP/s in the step and alone, peak device memory, AMP/fp32 ratios), and optionally
// the Fashion-MNIST CNN's time per epoch, beside ../shared/peers/pytorch_recipe_gpu.py and
// pytorch_fmnist.py. Prints tables, then one JSON object (also to --json FILE).
// A benchmark: CI builds it and never runs it.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "engine/backend/backend_registry.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/train/recipe_bench.h"
#include "engine/train/run_summary.h"

namespace {

using namespace amp;

struct Options {
  std::string backend = "cuda";
  std::string width = "4096", batch = "512", layers = "3", steps = "150";
  std::vector<std::string> modes = {"fp32", "fp16", "bf16"};
  std::string fmnistDir;  // empty: no CNN timing
  std::string cnnEpochs = "2";
  std::string jsonPath;
  std::vector<std::string> sets;  // extra key=value
};

[[noreturn]] void usage(const char* why) {
  if (why) std::fprintf(stderr, "ampstudio-gpu-bench: %s\n", why);
  std::fprintf(why ? stderr : stdout,
               "usage: ampstudio-gpu-bench [--backend cuda|cpu] [--width 4096] [--batch 512]\n"
               "       [--layers 3] [--steps 150] [--modes fp32,fp16,bf16] [--set key=value]...\n"
               "       [--fmnist DIR [--cnn-epochs 2]] [--json FILE]\n");
  std::exit(why ? 2 : 0);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage(nullptr);
    if (i + 1 >= argc) usage(("option " + a + " needs a value").c_str());
    const std::string v = argv[++i];
    if (a == "--backend") o.backend = v;
    else if (a == "--width") o.width = v;
    else if (a == "--batch") o.batch = v;
    else if (a == "--layers") o.layers = v;
    else if (a == "--steps") o.steps = v;
    else if (a == "--fmnist") o.fmnistDir = v;
    else if (a == "--cnn-epochs") o.cnnEpochs = v;
    else if (a == "--json") o.jsonPath = v;
    else if (a == "--set") o.sets.push_back(v);
    else if (a == "--modes") {
      o.modes.clear();
      for (std::size_t p = 0, q; p <= v.size(); p = q + 1) {
        q = v.find(',', p);
        if (q == std::string::npos) q = v.size();
        if (q > p) o.modes.push_back(v.substr(p, q - p));
      }
    } else usage(("unknown option " + a).c_str());
  }
  if (o.modes.empty()) usage("--modes: name at least one of fp32, fp16, bf16");
  return o;
}

RunConfig configFor(const char* preset, const Options& o, const std::string& mode) {
  RunConfig c = presetConfig(*findPreset(preset));
  setConfigValue(c, "backend", o.backend);
  setConfigValue(c, "amp.mode", mode);
  setConfigValue(c, "train.histogram_every", "0");
  for (const std::string& kv : o.sets) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) throw ConfigError("--set " + kv + ": expected key=value");
    setConfigValue(c, kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (auto e = validateRunConfig(c)) throw ConfigError(*e);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const bool tty = isatty(STDERR_FILENO);
  try {
    for (const std::string& line : gpuInventory().describe()) std::printf("%s\n", line.c_str());
    std::vector<BenchRun> recipe;
    for (const std::string& mode : o.modes) {
      RunConfig c = configFor("recipe", o, mode);
      setConfigValue(c, "model.width", o.width);
      setConfigValue(c, "train.batch_size", o.batch);
      setConfigValue(c, "model.layers", o.layers);
      setConfigValue(c, "train.steps", o.steps);
      recipe.push_back(benchRun(c, mode, tty ? benchProgressOnStderr : nullptr));
    }
    std::printf("recipe MLP: width %s, batch %s, %s layers, %lld steps on %s after %lld untimed\n", o.width.c_str(),
                o.batch.c_str(), o.layers.c_str(), static_cast<long long>(recipe.front().steps),
                recipe.front().backend.c_str(), static_cast<long long>(kBenchWarmup));
    std::fputs(benchTable(recipe).c_str(), stdout);
    std::vector<std::pair<std::string, std::string>> header = {
        {"width", o.width}, {"batch", o.batch}, {"layers", o.layers},
        {"backend", "\"" + recipe.front().backend + "\""}};

    if (!o.fmnistDir.empty()) {
      std::vector<BenchRun> cnn;
      for (const std::string& mode : o.modes) {
        RunConfig c = configFor("fmnist-cnn", o, mode);
        setConfigValue(c, "data.path", o.fmnistDir);
        setConfigValue(c, "train.epochs", o.cnnEpochs);
        cnn.push_back(benchRun(c, mode, tty ? benchProgressOnStderr : nullptr));
      }
      std::printf("\nFashion-MNIST CNN (fmnist-cnn preset, batch 128), %s epochs on %s:\n",
                  o.cnnEpochs.c_str(), cnn.front().backend.c_str());
      std::printf("%-6s %14s %14s %10s %12s\n", "mode", "median epoch s", "ms/step", "test acc",
                  "peak");
      std::string cnnJson = "[";
      for (const BenchRun& r : cnn) {
        const double epoch = median(r.epochSeconds);
        std::printf("%-6s %14.3f %14.3f %10.4f %12.1f MiB\n", r.label.c_str(), epoch,
                    r.medianStepMs, r.finalTestAcc, double(r.peak.totalPeak) / (1024.0 * 1024));
        cnnJson += std::string(cnnJson.size() > 1 ? ", " : "") + "{\"mode\": \"" + r.label +
                   "\", \"median_epoch_s\": " + std::to_string(epoch) +
                   ", \"median_ms_per_step\": " + std::to_string(r.medianStepMs) +
                   ", \"final_test_acc\": " + std::to_string(r.finalTestAcc) +
                   ", \"peak_bytes\": " + std::to_string(r.peak.totalPeak) + "}";
      }
      header.push_back({"fmnist_cnn", cnnJson + "]"});
    }
    const std::string json = benchJson(recipe, header);
    std::fputs(json.c_str(), stdout);
    if (!o.jsonPath.empty()) {
      std::FILE* f = std::fopen(o.jsonPath.c_str(), "wb");
      if (!f || std::fwrite(json.data(), 1, json.size(), f) != json.size() || std::fclose(f) != 0) {
        std::fprintf(stderr, "ampstudio-gpu-bench: %s: cannot write\n", o.jsonPath.c_str());
        return 1;
      }
    }
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "ampstudio-gpu-bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ampstudio-gpu-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
