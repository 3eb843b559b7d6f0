// Named experiments: the CLI's --preset and the app's lessons. A preset with variants is a
// side-by-side comparison (e.g. underflow: fp32 vs fp16 unscaled vs fp16 with dynamic scaling).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/config/run_config.h"

namespace amp {

using Overrides = std::vector<std::pair<std::string, std::string>>;

struct PresetVariant {
  std::string label;  // "fp16_noscale": also the sub-directory name of its outputs
  Overrides overrides;
};

struct Preset {
  std::string name;         // "underflow"
  std::string title;        // "Underflow without loss scaling"
  std::string explanation;  // a short paragraph for the lesson panel
  Overrides settings;       // on top of the default RunConfig
  std::vector<PresetVariant> variants;  // empty: a single run
  // A lesson made for a GPU: where none is usable, callers say so and apply `cpuSized` on top of
  // the settings (the same comparison at a size a CPU finishes in reasonable time).
  bool needsGpu = false;
  Overrides cpuSized{};
  // What the explanation talks about: the histogram tensor ("<kind>|<tensor>", the keys of the
  // histogram view, e.g. "weight_grad|0.weight") and the variant whose run shows it best
  // ("" = the first run). The app opens the histogram there when the lesson starts.
  std::string focus{};
  std::string focusVariant{};
  // Steps per second the app starts the lesson at, so a class can follow it as it happens (the
  // overflow lesson's skipped steps, the spirals being learned); 0: full speed. The Speed slider
  // shows it and changes it live; the CLI and screenshots ignore it. A paced lesson's variants
  // train side by side (each takes a small share of the CPU at its pace); the others queue,
  // so that the step times they compare are each run's alone.
  double demoPace = 0;
  // The chart the lesson is about ("histogram", "scale", "loss"; "" = leave the charts as they
  // are): where the charts are in tabs, the app brings it to the front when the lesson starts.
  std::string focusChart{};
};

const std::vector<Preset>& presets();
const Preset* findPreset(const std::string& name);  // nullptr if unknown
std::string presetNames();                          // "recipe, underflow, ..."
// The preset's config (defaults + settings [+ cpuSized] [+ a variant's overrides]).
RunConfig presetConfig(const Preset& p, const PresetVariant* variant = nullptr,
                       bool cpuSized = false);

}  // namespace amp
