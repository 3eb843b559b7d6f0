// Shared by the checkpoint tests: small runs that exercise every kind of state (Adam and SGD
// moments, loss-scaler backoffs and growth, BatchNorm buffers, dropout, pure-fp16 weights), and
// a dump of every byte of a trainer's state for bit-exact comparisons.
#pragma once

#include <QJsonDocument>
#include <QJsonObject>
#include <map>
#include <string>
#include <vector>

#include "engine/config/config_schema.h"
#include "engine/io/metrics_json.h"
#include "engine/train/trainer.h"

namespace amp {

inline RunConfig spiralsConfig() {
  RunConfig c;
  for (const char* kv : {"data.name=spirals", "data.samples=600", "model.name=mlp", "model.hidden=32,32",
                         "model.activation=tanh", "optimizer.name=adam", "optimizer.lr=0.01", "train.batch_size=64",
                         "train.steps=24", "train.eval_every=5", "train.histogram_every=4", "amp.mode=fp16",
                         "scaler.growth_interval=3", "train.inject_nonfinite=3,9,10,17", "schedule.name=cosine",
                         "seed=7"})
    applyOverride(c, kv);
  return c;
}

inline RunConfig recipeConfig() {
  RunConfig c;
  for (const char* kv : {"model.name=recipe_mlp", "model.width=64", "model.layers=3", "data.name=synthetic",
                         "data.batches=4", "train.batch_size=32", "train.steps=14", "optimizer.name=sgd",
                         "optimizer.momentum=0.9", "optimizer.lr=0.05", "amp.mode=fp16", "scaler.growth_interval=2",
                         "train.inject_nonfinite=2,8", "seed=3"})
    applyOverride(c, kv);
  return c;
}

// Pure fp16 weights (F16 in model.safetensors), BatchNorm buffers and dropout masks.
inline RunConfig pureFp16Config() {
  RunConfig c = spiralsConfig();
  for (const char* kv : {"amp.mode=pure_fp16", "model.batchnorm=true", "model.dropout=0.1", "optimizer.name=sgd",
                         "optimizer.momentum=0.9", "optimizer.lr=0.02", "scaler.kind=hysteresis"})
    applyOverride(c, kv);
  return c;
}

inline QByteArray metricsLine(const StepMetrics& m) {
  return stepMetricsJsonLine(m);
}

// Every byte of state: parameters, buffers, optimizer state, plus scaler and progress as text.
inline std::map<std::string, std::vector<std::uint8_t>> stateBytes(Trainer& t) {
  std::map<std::string, std::vector<std::uint8_t>> out;
  for (Parameter* p : t.model().parameters()) out["param " + p->name] = t.backend().toHostBytes(p->value);
  for (const auto& [n, b] : t.model().buffers()) out["buffer " + n] = t.backend().toHostBytes(*b);
  for (const auto& [n, s] : t.optimizer().stateTensors()) out["optim " + n] = t.backend().toHostBytes(*s);
  for (const auto& [k, v] : t.optimizer().stateScalars()) {
    const std::string text = std::to_string(v);
    out["optim scalar " + k] = {text.begin(), text.end()};
  }
  const auto text = QJsonDocument(QJsonObject{{"scale", t.scaler().scale()},
                                              {"tracker", t.scaler().growthTracker()},
                                              {"hyst", t.scaler().hysteresisLeft()},
                                              {"step", double(t.progress().step)},
                                              {"sched", double(t.progress().schedulerSteps)},
                                              {"epoch", double(t.progress().loader.epoch)},
                                              {"pos", double(t.progress().loader.position)}})
                        .toJson();
  out["scalars"] = {text.begin(), text.end()};
  return out;
}

}  // namespace amp
