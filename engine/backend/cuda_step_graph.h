// The CUDA backend's record of one training step as a CUDA graph (cuda_step_graph.cpp): the
// instantiated graph, the slots through which a replay hands the step's own scalars to the
// recorded kernels, and what the capture measured. No CUDA types, so cuda_backend.h stays
// free of them.
//
// Why slots: a graph replays its kernels with the arguments they were captured with. Most are
// the same every step (tensor addresses: the graph owns its memory; shapes; constants), but a
// few change: the loss gradient's factor (it carries the loss scale), 1/scale for the unscale,
// the optimizer's scalars (lr from the schedule, Adam's bias corrections), the scale counters.
// Those kernels read such a value from device memory when given a pointer (cuda_kernels.h); the
// captured step hands them slots in one device block, which the graph's first node fills from a
// pinned host block. A replay writes this step's values into the host block (computed by the
// same host code as an eager step) before launching, so the replayed kernels see them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"

namespace amp::cudabk {

enum class GraphMode : std::uint8_t { Eager, Capturing, Replaying };

enum class SlotKind : std::uint8_t {
  LossFactor,  // multiplier * lossSeed / divisor (the loss backward's k), set by beginStepReplay
  Scalar,      // a value the replayed call hands over (1/scale, optimizer scalars, counters)
  Check,       // no device value: the replayed call's arguments must equal the captured ones
};

struct GraphSlot {
  SlotKind kind = SlotKind::Scalar;
  std::string op;  // the call that made it ("unscale", "adam step", ...)
  std::size_t offset = 0, bytes = 0;
  float multiplier = 1.f, divisor = 1.f;  // LossFactor
  std::vector<std::int64_t> expected;     // Check: the captured call's arguments
};

// Bytes of per-step scalars one graph may hold (a step uses about 100).
constexpr std::size_t kGraphSlotBytes = 4096;

struct StepGraph {
  void* graph = nullptr;  // cudaGraph_t
  void* exec = nullptr;   // cudaGraphExec_t
  std::vector<GraphSlot> slots;
  std::size_t usedBytes = 0;
  std::size_t cursor = 0;  // the next slot a replayed call must match
  // Multi-tensor tables the captured launches read: cudaMalloc'd for the graph alone, written
  // once while capturing, freed with it.
  std::vector<std::pair<void*, std::size_t>> tables;
  // The capture's GEMM/convolution timing: its event pairs are nodes of the graph, so a replay
  // times them again; the flops and calls are the captured step's.
  std::size_t eventsUsed = 0;
  GemmCounters gemm;
};

}  // namespace amp::cudabk
