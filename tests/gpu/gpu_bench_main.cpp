// ampstudio-gpu-bench: `ampstudio-cli bench` without Qt, for the GPU machine (which has no Qt):
// the PyTorch AMP recipe in fp32, fp16 and bf16 on one backend (median step by CUDA events, total
// time, GEMM TFLOP/s in the step and alone, peak device memory, AMP/fp32 ratios), and optionally
// the Fashion-MNIST CNN's time per epoch, and with --gpt FILE the GPT (byte-level, trained on
// that text file) at one of pytorch_gpt.py's two sizes, beside ../shared/peers/pytorch_recipe_gpu.py,
// pytorch_fmnist.py and pytorch_gpt.py. Prints tables, then one JSON object (also to --json
// FILE): the recipe's runs, with the CNN's and the GPT's under "fmnist_cnn" and "gpt"; with
// --recipe off the GPT's runs are the object's own "runs". The CNN's figure says which layout its
// activations ran in ("fmnist_cnn_layout": channels-last unless AMP_CUDA_DISABLE=channels-last),
// so that figures from both layouts are never mixed up.
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
  bool recipe = true;
  std::string gptCorpus;  // empty: no GPT timing
  std::string gptSize = "default";
  std::string gptSteps = "300";
  std::string jsonPath;
  std::vector<std::string> sets;  // extra key=value
};

[[noreturn]] void usage(const char* why) {
  if (why) std::fprintf(stderr, "ampstudio-gpu-bench: %s\n", why);
  std::fprintf(why ? stderr : stdout,
               "usage: ampstudio-gpu-bench [--backend cuda|cpu] [--width 4096] [--batch 512]\n"
               "       [--layers 3] [--steps 150] [--modes fp32,fp16,bf16] [--set key=value]...\n"
               "       [--fmnist DIR [--cnn-epochs 2]] [--recipe on|off]\n"
               "       [--gpt TEXT_FILE [--gpt-size default|large] [--gpt-steps 300]] [--json FILE]\n"
               "GPT sizes (pytorch_gpt.py's): default 4 layers, 4 heads, 128 wide, context 128;\n"
               "large 12 layers, 12 heads, 768 wide, context 256; both batch 32, AdamW.\n"
               "Any amp.mode is a mode: --modes bf16,fp8 --set fp8.recipe=current times fp8 beside bf16.\n");
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
    else if (a == "--gpt") o.gptCorpus = v;
    else if (a == "--gpt-size") o.gptSize = v;
    else if (a == "--gpt-steps") o.gptSteps = v;
    else if (a == "--recipe") {
      if (v != "on" && v != "off") usage("--recipe: on or off");
      o.recipe = v == "on";
    }
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
  if (o.gptSize != "default" && o.gptSize != "large") usage("--gpt-size: default or large");
  if (!o.recipe && o.gptCorpus.empty()) usage("--recipe off leaves nothing to time without --gpt");
  return o;
}

// A preset's config (the defaults where this build has no such preset) with the bench's
// settings: backend, mode, no histograms, then the --set pairs.
RunConfig configFor(const char* preset, const Options& o, const std::string& mode) {
  const Preset* p = findPreset(preset);
  RunConfig c = p ? presetConfig(*p) : RunConfig{};
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

// pytorch_gpt.py's model and training at one of its two sizes: layers, heads, width, context.
struct GptSize {
  const char* layers;
  const char* heads;
  const char* embd;
  const char* block;
};
GptSize gptSize(const std::string& name) {
  return name == "large" ? GptSize{"12", "12", "768", "256"} : GptSize{"4", "4", "128", "128"};
}

RunConfig gptConfig(const Options& o, const std::string& mode) {
  const GptSize g = gptSize(o.gptSize);
  // The peer's settings first (AdamW lr 1e-3, betas 0.9/0.99, no weight decay, batch 32), then
  // configFor's, so --set may still change any of them.
  Options withPeer = o;
  withPeer.sets.insert(withPeer.sets.begin(),
                       {"model.name=gpt", std::string("model.layers=") + g.layers,
                        std::string("model.heads=") + g.heads, std::string("model.embd=") + g.embd,
                        std::string("model.block=") + g.block, "data.name=text",
                        "data.path=" + o.gptCorpus, "optimizer.name=adamw", "optimizer.lr=0.001",
                        "optimizer.beta1=0.9", "optimizer.beta2=0.99", "optimizer.weight_decay=0",
                        "train.batch_size=32", "train.steps=" + o.gptSteps,
                        // No evaluation inside the timed steps.
                        "train.eval_every=" + std::to_string(std::stoll(o.gptSteps) + kBenchWarmup + 1)});
  return configFor("gpt", withPeer, mode);
}

std::vector<std::pair<std::string, std::string>> gptHeader(const Options& o, const BenchRun& first) {
  const GptSize g = gptSize(o.gptSize);
  return {{"model", "\"gpt\""}, {"size", "\"" + o.gptSize + "\""}, {"layers", g.layers},
          {"heads", g.heads},     {"embd", g.embd},                   {"block", g.block},
          {"batch", "32"},        {"backend", "\"" + first.backend + "\""}};
}

// Prints the JSON and writes it to `path` (when given); the program's exit status.
int writeJson(const std::string& json, const std::string& path) {
  std::fputs(json.c_str(), stdout);
  if (path.empty()) return 0;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(json.data(), 1, json.size(), f) != json.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "ampstudio-gpu-bench: %s: cannot write\n", path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const bool tty = isatty(STDERR_FILENO);
  try {
    for (const std::string& line : gpuInventory().describe()) std::printf("%s\n", line.c_str());
    std::vector<BenchRun> gpt;
    if (!o.gptCorpus.empty()) {
      for (const std::string& mode : o.modes)
        gpt.push_back(benchRun(gptConfig(o, mode), mode, tty ? benchProgressOnStderr : nullptr));
      const GptSize g = gptSize(o.gptSize);
      std::printf("GPT (%s): %s layers, %s heads, %s wide, context %s, batch 32, AdamW; %lld steps on "
                  "%s after %lld untimed\n", o.gptSize.c_str(), g.layers, g.heads, g.embd, g.block,
                  static_cast<long long>(gpt.front().steps), gpt.front().backend.c_str(),
                  static_cast<long long>(kBenchWarmup));
      std::fputs(benchTable(gpt).c_str(), stdout);
      if (!o.recipe) return writeJson(benchJson(gpt, gptHeader(o, gpt.front())), o.jsonPath);
    }
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
      // The layout the runs' backends prefer for images (each run makes its own, alike).
      const std::string layout = memoryFormatName(makeBackend(o.backend)->preferredImageFormat());
      std::vector<BenchRun> cnn;
      for (const std::string& mode : o.modes) {
        RunConfig c = configFor("fmnist-cnn", o, mode);
        setConfigValue(c, "data.path", o.fmnistDir);
        setConfigValue(c, "train.epochs", o.cnnEpochs);
        cnn.push_back(benchRun(c, mode, tty ? benchProgressOnStderr : nullptr));
      }
      std::printf("\nFashion-MNIST CNN (fmnist-cnn preset, batch 128), %s epochs on %s, %s "
                  "activations:\n",
                  o.cnnEpochs.c_str(), cnn.front().backend.c_str(), layout.c_str());
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
      header.push_back({"fmnist_cnn_layout", "\"" + layout + "\""});
    }
    if (!gpt.empty()) header.push_back({"gpt", benchJson(gpt, gptHeader(o, gpt.front()))});
    return writeJson(benchJson(recipe, header), o.jsonPath);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "ampstudio-gpu-bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ampstudio-gpu-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
