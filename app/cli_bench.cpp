// ampstudio-cli bench: the PyTorch AMP recipe in fp32, fp16 and bf16 on the backend the config
// names (backend=auto: the GPU when one is usable): median step (CUDA events on a GPU), total
// time, GEMM TFLOP/s inside the step against the same GEMMs alone, peak memory (device bytes on a
// GPU) and the AMP/fp32 ratios; a table, then the same as JSON. The figures come from
// engine/train/recipe_bench, which the Qt-free ampstudio-gpu-bench shares. A benchmark, never a
// timed test.
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "app/cli_experiment.h"
#include "app/cli_output_folder.h"
#include "engine/backend/backend_registry.h"
#include "engine/train/recipe_bench.h"

namespace amp::cli {

int cmdBench(const Args& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: ampstudio-cli bench [--set key=value]... [--steps N] [--json FILE]\n"
          "Times the recipe preset (model.width, model.layers, train.batch_size settable) in\n"
          "fp32, fp16 and bf16 on the backend (--set backend=cpu|cuda; auto: the GPU when one is\n"
          "usable): median step (CUDA events on a GPU), total time, GEMM TFLOP/s in the step and\n"
          "alone, peak memory (device bytes on a GPU), AMP/fp32 ratios; a table, then JSON.\n"
          "--steps: 150 on a GPU (the recipe's 50 batches x 3 epochs), 40 on the CPU.\n");
      return 0;
    }
  ExperimentArgs ea;
  std::vector<NamedConfig> configs;
  std::string jsonPath;
  std::string steps;
  try {
    ea = parseExperimentArgs(args, {"--steps=", "--json="});
    for (std::size_t i = 0; i + 1 < ea.rest.size(); i += 2) {
      if (ea.rest[i] == "--json") jsonPath = ea.rest[i + 1];
      if (ea.rest[i] == "--steps") steps = ea.rest[i + 1];
    }
    if (ea.preset.empty()) ea.preset = "recipe";
    // The recipe's 150 steps (50 batches x 3 epochs) on a GPU, where they take seconds; 40 on
    // the CPU, enough for a stable median.
    std::string backend = "auto";
    for (const auto& kv : ea.overrides)
      if (kv.rfind("backend=", 0) == 0) backend = kv.substr(8);
    if (steps.empty()) steps = resolveBackendName(backend) == "cuda" ? "150" : "40";
    ea.overrides.insert(ea.overrides.begin(), {"train.steps=" + steps, "train.histogram_every=0"});
    configs = buildConfigs(ea);
    if (!jsonPath.empty()) checkOutputFile(jsonPath);  // before the work, not after it
  } catch (const std::exception& e) {
    printError("bench", e.what());
    return 2;
  }
  const RunConfig base = configs.front().config;
  std::vector<BenchRun> runs;
  try {
    for (const char* mode : {"fp32", "fp16", "bf16"}) {
      RunConfig c = base;
      setConfigValue(c, "amp.mode", mode);
      runs.push_back(benchRun(c, mode, isatty(STDERR_FILENO) ? benchProgressOnStderr : nullptr));
    }
  } catch (const ConfigError& e) {
    printError("bench", e.what());
    return 2;
  } catch (const std::exception& e) {
    printError("bench", e.what());
    return 2;
  }
  std::printf("recipe MLP: width %lld, batch %lld, %d layers, %lld steps on %s after %lld untimed (median%s)\n",
              static_cast<long long>(base.model.width), static_cast<long long>(base.train.batchSize),
              base.model.layers, static_cast<long long>(runs.front().steps), runs.front().backend.c_str(),
              static_cast<long long>(kBenchWarmup),
              runs.front().backend == "cpu" ? "" : "; step time by CUDA events");
  std::fputs(benchTable(runs).c_str(), stdout);
  const std::string json =
      benchJson(runs, {{"width", std::to_string(base.model.width)},
                       {"batch", std::to_string(base.train.batchSize)},
                       {"layers", std::to_string(base.model.layers)},
                       {"backend", "\"" + runs.front().backend + "\""}});
  std::fputs(json.c_str(), stdout);
  if (!jsonPath.empty() && !writeOutputFile("bench", jsonPath, json)) return 2;
  return 0;
}

}  // namespace amp::cli
