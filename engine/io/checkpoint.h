// Checkpoints: one .zip per checkpoint, enough to continue a run bit for bit.
//
//   manifest.json          format version, app version, full config, step, epoch, scheduler
//                          steps, the loader's position and RNG state, the model's tensor list,
//                          the optimizer's scalar state and a SHA-256 of every other entry
//   model.safetensors      master weights (fp32; fp16 in pure-fp16 mode) named like PyTorch's
//                          nn.Sequential state_dict ("0.weight", "0.bias", ...) + buffers
//   optimizer.safetensors  optimizer state ("0.weight.exp_avg", "0.weight.momentum_buffer", ...)
//   scaler.json            GradScaler.state_dict() keys ({} when the scaler is disabled)
//   metrics.jsonl          the run's metrics up to this step
//
// Typical resume:  CheckpointInfo info = readCheckpointInfo(path);
//                  Trainer t(info.config);  loadCheckpoint(t, path);  while (...) t.step();
#pragma once

#include <QByteArray>
#include <QString>
#include <optional>
#include <string>

#include "engine/io/checkpoint_manifest.h"
#include "engine/io/safetensors.h"
#include "engine/train/trainer.h"

namespace amp {

// Writes the trainer's complete state to zipPath (folders are created). The file appears
// atomically: a previous file of that name survives any failure or kill. metricsJsonl: the
// run's metrics.jsonl so far (stored as is). Throws CheckpointError.
void saveCheckpoint(Trainer& trainer, const QString& zipPath, const QByteArray& metricsJsonl);

// Reads and checks manifest.json only (cheap: the tensors are not read), e.g. to build the
// Trainer from info.config. Throws CheckpointError("PATH: manifest.json: ...").
CheckpointInfo readCheckpointInfo(const QString& zipPath);

// Reads every entry, verifies hashes and formats, and checks that everything fits the trainer
// (parameter names, shapes and dtypes, optimizer kind, scaler, data size) before changing
// anything; then restores parameters, buffers, optimizer state, scaler state and progress in one
// go. On CheckpointError the trainer is untouched. Meant for a freshly built Trainer.
void loadCheckpoint(Trainer& trainer, const QString& zipPath);

// metrics.jsonl of the checkpoint, hash-verified. Throws CheckpointError.
QByteArray checkpointMetrics(const QString& zipPath);

// model.safetensors of the checkpoint (parameters and buffers), hash-verified: what a weights-only
// export starts from. Throws CheckpointError.
SafetensorsFile checkpointModel(const QString& zipPath);

// The live model's parameters and buffers as model.safetensors holds them (state_dict names).
std::vector<SafeTensor> modelTensors(Trainer& trainer);

// "step-<N>.zip", the name the CLI and the app give the checkpoint after step N.
QString checkpointFileName(std::int64_t step);

// Whether `wanted` (the checkpoint's config with the user's changes) can continue the run that
// `saved` describes: the model, the data, the seed and the precision mode must stay (the weights,
// the loader state and the scaler state would not fit otherwise). Steps, schedules, learning
// rates, evaluation and checkpoint settings may change. A one-line message naming the key, or
// nothing.
std::optional<std::string> resumeConfigError(const RunConfig& saved, const RunConfig& wanted);

}  // namespace amp
