// CUDA backend: a training step recorded once as a CUDA graph and replayed (the protocol is
// Backend's, the slots' reason cuda_step_graph.h's). A replayed step costs the host one graph
// launch instead of a few hundred kernel launches and the layers' bookkeeping, which is most
// of a small model's step on a fast GPU.
//
// What keeps a replay exact:
// - Memory. Blocks allocated or freed while capturing become the graph's (m_graphBlocks): they
//   go back to m_graphCache, never to the general cache, until the graph is dropped, so no
//   later tensor can take memory a replay rewrites. Tensors made before the capture that the
//   graph reads (weights, optimizer state, weight copies, the step's input tensors) live as
//   long as the trainer keeps the graph.
// - Values. The per-step scalars go through slots; every other argument the tail of a replayed
//   step passes is compared with the captured call's (stepCheck), so a step that differs in
//   anything the graph baked in is refused (a logic error, before anything ran) instead of
//   replayed wrongly.
// - Order. The capture runs on the one stream that every op uses, so the graph is the eager
//   step's sequence of kernels, copies and timing events.
#include <cuda_runtime.h>

#include <cstring>
#include <stdexcept>

#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_error.h"
#include "engine/backend/cuda_fast_paths.h"

namespace amp {

using cudabk::GraphMode;
using cudabk::GraphSlot;
using cudabk::SlotKind;

namespace {
const char* kSwitchHint = " (AMP_CUDA_DISABLE=cuda-graphs turns step graphs off)";
}  // namespace

bool CudaBackend::capturesSteps() const {
  return m_stepGraphsOn && cudabk::fastPathEnabled("cuda-graphs");
}

void CudaBackend::refuseWhileCapturing(const char* op) const {
  if (m_graphMode == GraphMode::Capturing)
    throw StepCaptureFailed(std::string(op) +
                            " cannot be recorded in a CUDA graph of the training step");
}

void CudaBackend::recordEvent(void* event, const char* op) {
  const auto e = static_cast<cudaEvent_t>(event);
  checkCuda(capturing() ? cudaEventRecordWithFlags(e, m_stream, cudaEventRecordExternal)
                        : cudaEventRecord(e, m_stream),
            op);
}

void CudaBackend::beginStepCapture() {
  useDevice();
  if (!capturesSteps()) throw std::logic_error("beginStepCapture: CUDA step graphs are off");
  if (m_graphMode != GraphMode::Eager)
    throw std::logic_error("beginStepCapture: a capture or replay is already under way");
  releaseGraph();
  // Whatever fails here fails before anything of the step was queued: a StepCaptureFailed, so
  // the trainer runs the step eagerly instead of stopping the run.
  try {
    if (!m_slotsHost) {
      checkCuda(cudaHostAlloc(&m_slotsHost, cudabk::kGraphSlotBytes, cudaHostAllocDefault),
                "allocate graph slots");
      std::memset(m_slotsHost, 0, cudabk::kGraphSlotBytes);
    }
    if (!m_slotsDevice)
      checkCuda(cudaMalloc(&m_slotsDevice, cudabk::kGraphSlotBytes), "allocate graph slots");
    if (!m_sideStream) {
      cudaStream_t side = nullptr;
      checkCuda(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "create side stream");
      m_sideStream = side;
    }
    // Everything queued before (the batch's upload, the last evaluation) finishes first: blocks
    // it used may be handed to the graph.
    synchronize("begin step capture");
    m_graph = std::make_unique<cudabk::StepGraph>();
    m_graphTail = false;
    // Relaxed: the capture may allocate (cudaMalloc) when the cache has no block of a size.
    checkCuda(cudaStreamBeginCapture(m_stream, cudaStreamCaptureModeRelaxed), "begin step capture");
    m_graphMode = GraphMode::Capturing;
    // The graph's first node: this step's scalars, from the pinned block to the device block.
    checkCuda(cudaMemcpyAsync(m_slotsDevice, m_slotsHost, cudabk::kGraphSlotBytes,
                              cudaMemcpyHostToDevice, m_stream),
              "begin step capture", "graph slots");
  } catch (const StepCaptureFailed&) {
    dropStepGraph();
    throw;
  } catch (const std::exception& e) {
    dropStepGraph();
    throw StepCaptureFailed(std::string("preparing the step's capture: ") + e.what());
  }
}

void CudaBackend::beginStepReplay(float lossSeed) {
  if (!hasStepGraph()) throw std::logic_error("beginStepReplay: no step graph to replay");
  if (m_graphMode != GraphMode::Eager)
    throw std::logic_error("beginStepReplay: a capture or replay is already under way");
  m_graphMode = GraphMode::Replaying;
  m_graph->cursor = 0;
  // The loss backward's factor, by the expression the eager op uses (multiplier * seed / m).
  for (const GraphSlot& s : m_graph->slots)
    if (s.kind == SlotKind::LossFactor) {
      const float k = s.multiplier * lossSeed / s.divisor;
      std::memcpy(static_cast<char*>(m_slotsHost) + s.offset, &k, sizeof k);
    }
}

namespace {
// Moves the cursor past loss factors: beginStepReplay fills those, no replayed call does.
void skipLossFactors(cudabk::StepGraph& g) {
  while (g.cursor < g.slots.size() && g.slots[g.cursor].kind == SlotKind::LossFactor) ++g.cursor;
}

// The next slot a replayed call must match.
GraphSlot& nextSlot(cudabk::StepGraph& g, const char* op, SlotKind kind) {
  skipLossFactors(g);
  if (g.cursor == g.slots.size())
    throw std::logic_error(std::string("CUDA graph replay: the step called ") + op +
                           ", which the captured step did not" + kSwitchHint);
  GraphSlot& s = g.slots[g.cursor++];
  if (s.kind != kind || s.op != op)
    throw std::logic_error(std::string("CUDA graph replay: the step called ") + op +
                           " where the captured step called " + s.op + kSwitchHint);
  return s;
}
}  // namespace

const void* CudaBackend::stepScalar(SlotKind kind, const char* op, const void* value,
                                    std::size_t bytes, float multiplier, float divisor) {
  if (capturing()) {
    cudabk::StepGraph& g = *m_graph;
    const std::size_t offset = (g.usedBytes + 15) / 16 * 16;  // aligned for any scalar struct
    if (offset + bytes > cudabk::kGraphSlotBytes)
      throw StepCaptureFailed(std::string(op) + ": the step's scalars outgrow the graph's " +
                              std::to_string(cudabk::kGraphSlotBytes) + "-byte slot block");
    std::memcpy(static_cast<char*>(m_slotsHost) + offset, value, bytes);
    GraphSlot s;
    s.kind = kind;
    s.op = op;
    s.offset = offset;
    s.bytes = bytes;
    s.multiplier = multiplier;
    s.divisor = divisor;
    g.slots.push_back(std::move(s));
    g.usedBytes = offset + bytes;
    return static_cast<const char*>(m_slotsDevice) + offset;
  }
  if (replaying()) {
    GraphSlot& s = nextSlot(*m_graph, op, kind);
    if (s.bytes != bytes) throw std::logic_error(std::string("CUDA graph replay: ") + op + ": slot size differs");
    std::memcpy(static_cast<char*>(m_slotsHost) + s.offset, value, bytes);
  }
  return nullptr;
}

void CudaBackend::stepCheck(const char* op, std::vector<std::int64_t> args) {
  if (capturing()) {
    GraphSlot s;
    s.kind = SlotKind::Check;
    s.op = op;
    s.expected = std::move(args);
    m_graph->slots.push_back(std::move(s));
  } else if (replaying()) {
    const GraphSlot& s = nextSlot(*m_graph, op, SlotKind::Check);
    if (s.expected != args)
      throw std::logic_error(std::string("CUDA graph replay: ") + op +
                             " was called with other tensors or settings than in the captured step" +
                             kSwitchHint);
  }
}

void CudaBackend::launchStepGraph() {
  cudabk::StepGraph& g = *m_graph;
  m_graphTail = false;
  if (capturing()) {
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(m_stream, &graph);
    m_graphMode = GraphMode::Eager;
    if (ended != cudaSuccess || !graph) {
      cudaGetLastError();
      if (graph) cudaGraphDestroy(graph);
      releaseGraph();
      throw StepCaptureFailed(std::string("ending the training step's capture: ") +
                              cudaGetErrorString(ended));
    }
    g.graph = graph;
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    if (made != cudaSuccess) {
      cudaGetLastError();
      releaseGraph();
      throw StepCaptureFailed(std::string("instantiating the training step's graph: ") +
                              cudaGetErrorString(made));
    }
    g.exec = exec;
    g.eventsUsed = m_eventsUsed;
    g.gemm = m_gemmCounters;
  } else {
    // Every call of the captured tail must have been made, in its order.
    skipLossFactors(g);
    if (g.cursor != g.slots.size())
      throw std::logic_error("CUDA graph replay: the step did not call " + g.slots[g.cursor].op +
                             ", which the captured step did" + kSwitchHint);
    m_graphMode = GraphMode::Eager;
    // The replay's GEMMs and convolutions are the captured ones, timed by the graph's events.
    m_eventsUsed = g.eventsUsed;
    m_gemmCounters = g.gemm;
  }
  useDevice();
  // From beginStepTiming when the trainer marked it (before the batch's upload, as an eager
  // step's time starts), else from the launch.
  if (!m_stepTimingMarked) recordEvent(m_stepEvents.start, "step timing");
  checkCuda(cudaGraphLaunch(static_cast<cudaGraphExec_t>(g.exec), m_stream), "launch step graph");
  recordEvent(m_stepEvents.stop, "step timing");
}

void CudaBackend::dropStepGraph() {
  if (capturing()) {
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(m_stream, &graph);  // discarded: nothing of it ran
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
  }
  m_graphMode = GraphMode::Eager;
  releaseGraph();
}

void CudaBackend::releaseGraph() noexcept {
  if (!m_graph) return;
  cudaStreamSynchronize(m_stream);  // a launched replay may still read its memory
  if (m_graph->exec) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(m_graph->exec));
  if (m_graph->graph) cudaGraphDestroy(static_cast<cudaGraph_t>(m_graph->graph));
  // The tables were the graph's alone; every block of the graph goes back to the general cache,
  // and tensors still holding graph memory free it there later.
  for (const auto& table : m_graph->tables) cudaFree(table.first);
  m_graph.reset();
  {
    std::lock_guard lock(m_graphBlocksMutex);
    m_graphBlocks.clear();
  }
  m_graphCache.drain([this](void* p, std::size_t bytes) { m_blocks.keep(p, bytes); });
  cudaGetLastError();
}

void CudaBackend::incrementInt(Tensor& counter) {
  useDevice();
  if (counter.dtype() != DType::I32 || counter.numel() != 1)
    throw std::invalid_argument("incrementInt: needs a one-element int32 tensor, got " +
                                cudabk::shapes({&counter}));
  cuda::launchIncrementInt(counter.data<std::int32_t>(), m_stream);
  checkLaunch("increment counter", cudabk::shapes({&counter}));
}

}  // namespace amp
