// CUDA backend: construction on the training thread, the caching device allocator, host
// transfers (converted on the host with the shared bit-exact code), and the simple elementwise
// ops (fill, casts, copies, accumulate, scale, round-through, fault injection).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "engine/backend/backend_checks.h"
#include "engine/backend/cuda_alloc_retry.h"
#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_fast_paths.h"
#include "engine/backend/cuda_error.h"
#include "kernels/common/float16.h"
#include "kernels/common/image_layout.h"

namespace amp {

namespace cudabk {
int floatCode(const Tensor& t, const char* op) {
  if (!(t.dtype() == DType::F32 || t.dtype() == DType::F16 || t.dtype() == DType::BF16))
    throw std::invalid_argument(std::string(op) + ": expected a floating-point tensor, got " +
                                std::string(dtypeName(t.dtype())));
  return static_cast<int>(t.dtype());
}

void requireSameSize(const Tensor& a, const Tensor& b, const char* op) {
  if (a.numel() != b.numel())
    throw std::invalid_argument(std::string(op) + ": shapes " + shapeString(a.shape()) + " and " +
                                shapeString(b.shape()) + " differ");
}

std::string shapes(std::initializer_list<const Tensor*> ts) {
  std::string s;
  for (const Tensor* t : ts) {
    if (!t) continue;
    if (!s.empty()) s += ", ";
    s += shapeString(t->shape()) + " " + std::string(dtypeName(t->dtype()));
  }
  return s;
}
}  // namespace cudabk

using cudabk::floatCode;

namespace {
constexpr std::size_t kAlignment = 512;  // cudaMalloc gives 256; 512 keeps size classes few
std::size_t roundedSize(std::size_t bytes) {
  return std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
}
}  // namespace

CudaBackend::CudaBackend(int device, bool tf32, bool reducedPrecisionReduction)
    : m_device(device), m_tf32(tf32), m_reducedPrecisionReduction(reducedPrecisionReduction) {
  // Whatever was created before a failure (stream, records, events, the cuBLASLt handle) is
  // released by the destructor's code, which does not run for a constructor that throws.
  try {
    init();
  } catch (...) {
    release();
    throw;
  }
}

void CudaBackend::init() {
  const int device = m_device;
  checkCuda(cudaSetDevice(device), "set device", "device " + std::to_string(device));
  cudaDeviceProp prop{};
  checkCuda(cudaGetDeviceProperties(&prop, device), "device properties");
  m_deviceName = prop.name;
  m_ccMajor = prop.major;
  m_ccMinor = prop.minor;
  cudaStream_t stream = nullptr;
  checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "create stream");
  m_stream = stream;
  checkCuda(cudaMalloc(reinterpret_cast<void**>(&m_stepRecord), sizeof(cuda::DeviceStepStats)),
            "allocate step stats");
  checkCuda(cudaMalloc(reinterpret_cast<void**>(&m_opRecord), sizeof(cuda::DeviceStepStats)),
            "allocate op stats");
  m_gemm = std::make_unique<cuda::CublasLtGemm>();
  // cuBLASLt's workspace is device memory this backend holds: counted as workspace, as PyTorch
  // counts cuBLAS's workspace in memory_allocated.
  m_memory.onAlloc(MemCategory::Workspace, static_cast<std::int64_t>(m_gemm->workspaceBytes()));
  // cuDNN's handle, bound to the stream; its per-call workspaces come from our allocator.
  m_conv = std::make_unique<cuda::CudnnConv>(m_stream);
  cudaEvent_t event = nullptr;
  checkCuda(cudaEventCreate(&event), "step timing event");
  m_stepEvents.start = event;
  checkCuda(cudaEventCreate(&event), "step timing event");
  m_stepEvents.stop = event;
  cuda::launchBeginStep(m_stepRecord, m_stream);
  checkLaunch("begin step", "");
}

CudaBackend::~CudaBackend() { release(); }

void CudaBackend::useDevice() const {
  // A replayed step runs no op of its own until its graph is launched (cuda_step_graph.cpp).
  if (m_graphMode == cudabk::GraphMode::Replaying)
    throw std::logic_error("CUDA graph replay: an op outside the step's AMP tail was called "
                           "(AMP_CUDA_DISABLE=cuda-graphs turns step graphs off)");
  // A no-op when the device is already current; another CudaBackend on this thread (or any
  // other CUDA user) may have changed it since the last call.
  const cudaError_t e = cudaSetDevice(m_device);
  if (e != cudaSuccess) checkCuda(e, "set device", "device " + std::to_string(m_device));
}

void CudaBackend::release() noexcept {
  // Must not throw: errors here (a device already lost) are ignored.
  cudaSetDevice(m_device);
  cudaGetLastError();
  // An open capture ends first: waiting on a capturing stream would be illegal.
  if (m_graphMode == cudabk::GraphMode::Capturing) {
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(m_stream, &graph);
    if (graph) cudaGraphDestroy(graph);
  }
  if (m_stream) cudaStreamSynchronize(m_stream);
  m_graphMode = cudabk::GraphMode::Eager;
  releaseGraph();  // its blocks into m_blocks, freed below
  if (m_slotsHost) cudaFreeHost(m_slotsHost);
  if (m_slotsDevice) cudaFree(m_slotsDevice);
  if (m_sideStream) cudaStreamDestroy(m_sideStream);
  m_slotsHost = m_slotsDevice = nullptr;
  m_sideStream = nullptr;
  m_nccl.reset();  // the NCCL communicator (cuda_backend_nccl.cpp) before the device's memory
  if (m_gemm) m_memory.onFree(MemCategory::Workspace, static_cast<std::int64_t>(m_gemm->workspaceBytes()));
  m_gemm.reset();
  if (m_fp8Gemm) m_memory.onFree(MemCategory::Workspace, static_cast<std::int64_t>(m_fp8Gemm->workspaceBytes()));
  m_fp8Gemm.reset();
  m_conv.reset();
  m_blocks.drain([](void* p, std::size_t) { cudaFree(p); });
  for (const EventPair& e : m_events) {
    cudaEventDestroy(static_cast<cudaEvent_t>(e.start));
    cudaEventDestroy(static_cast<cudaEvent_t>(e.stop));
  }
  if (m_stepEvents.start) cudaEventDestroy(static_cast<cudaEvent_t>(m_stepEvents.start));
  if (m_stepEvents.stop) cudaEventDestroy(static_cast<cudaEvent_t>(m_stepEvents.stop));
  cudaFree(m_stepRecord);
  cudaFree(m_opRecord);
  cudaFree(m_scratch);
  cudaFree(m_table);
  if (m_stream) cudaStreamDestroy(m_stream);
  m_events.clear();
  m_stepEvents = {nullptr, nullptr};
  m_stepRecord = m_opRecord = nullptr;
  m_scratch = m_table = nullptr;
  m_stream = nullptr;
  cudaGetLastError();
}

// What nvidia-smi would show for the device: its whole memory and what is free on it now (the
// caching allocator's spare blocks, other processes and the CUDA context all count as used).
// A failure is not worth failing a step over: the chart then shows no device figures.
std::optional<DeviceMemoryInfo> CudaBackend::deviceMemory() const {
  std::size_t freeBytes = 0, totalBytes = 0;
  if (cudaSetDevice(m_device) != cudaSuccess || cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  return DeviceMemoryInfo{static_cast<std::int64_t>(totalBytes), static_cast<std::int64_t>(freeBytes)};
}

// What the fp8 ops run on (cuda_backend_quantized.cpp), for the description.
std::string CudaBackend::fp8Description() const {
  std::string d = cudabk::fastPathEnabled("fp8-quantize") ? "; fp8 quantisers on the device, "
                                                           : "; fp8 quantisers on the host (AMP_CUDA_DISABLE=fp8-quantize), ";
  const bool blockCores = m_ccMajor >= 10 && cudabk::fastPathEnabled("fp8-gemm") &&
                          cudabk::fastPathEnabled("fp8-block-gemm");
  if (m_ccMajor * 10 + m_ccMinor >= 89 && cudabk::fastPathEnabled("fp8-gemm"))
    d += blockCores ? "per-tensor fp8, MXFP8 and NVFP4 GEMMs on the tensor cores (cuBLASLt; blockwise dequantised "
                      "into fp32)"
                    : "per-tensor fp8 GEMMs on the fp8 tensor cores (cuBLASLt), block-scaled ones dequantised into fp32";
  else
    d += "fp8 GEMMs dequantised into fp32 (no fp8 tensor cores, or AMP_CUDA_DISABLE=fp8-gemm)";
  return d;
}

std::string CudaBackend::description() const {
  return "CUDA: " + m_deviceName + " (sm_" + std::to_string(m_ccMajor) + std::to_string(m_ccMinor) +
         "); GEMMs by cuBLASLt and convolutions by cuDNN " + cuda::CudnnConv::versionText() + ": fp32 " +
         (m_tf32 ? "with TF32 tensor cores (tf32=true)" : "in full fp32 (TF32 off)") +
         ", fp16/bf16 on tensor cores with fp32 accumulation; AMP kernels on the device" + fp8Description();
}

// Tensor cores take fp16 from Volta/Turing on, bf16 from Ampere (sm_80) on; fp32 runs on the
// CUDA cores unless TF32 was asked for.
bool CudaBackend::nativeCompute(DType dtype) const {
  return dtype != DType::BF16 || m_ccMajor >= 8;
}

std::string CudaBackend::computePath(DType dtype) const {
  const std::string sm = "sm_" + std::to_string(m_ccMajor) + std::to_string(m_ccMinor);
  switch (dtype) {
    case DType::F16:
      return "native (cuBLASLt/cuDNN, tensor cores, fp32 accumulation, " + sm + ")";
    case DType::BF16:
      return nativeCompute(dtype)
                 ? "native (cuBLASLt/cuDNN, tensor cores, fp32 accumulation, " + sm + ")"
                 : "computed without bf16 tensor cores (" + sm +
                       " has none; sm_80 and up do): GEMMs by cuBLASLt, convolutions in fp32 on exact copies";
    default:
      return std::string("native (cuBLASLt/cuDNN, ") + (m_tf32 ? "TF32 tensor cores, tf32=true" : "full fp32, TF32 off") +
             ", " + sm + ")";
  }
}

void CudaBackend::checkLaunch(const char* op, const std::string& detail) const {
  checkCuda(cudaGetLastError(), op, detail);
}

void CudaBackend::synchronize(const char* op) const {
  refuseWhileCapturing(op);
  checkCuda(cudaStreamSynchronize(m_stream), op);
}

void* CudaBackend::allocateBytes(std::size_t bytes) {
  useDevice();
  const std::size_t rounded = roundedSize(bytes);
  if (capturing()) {
    // The graph's own memory (cuda_step_graph.cpp): its free blocks first, then the cache's
    // (idle: the capture began with a synchronisation), then new ones.
    void* p = m_graphCache.take(rounded);
    if (!p) p = m_blocks.take(rounded);
    if (!p && cudaMalloc(&p, rounded) != cudaSuccess) {
      cudaGetLastError();
      throw StepCaptureFailed("allocating " + std::to_string(rounded) +
                              " bytes for the training step's graph failed");
    }
    std::lock_guard lock(m_graphBlocksMutex);
    m_graphBlocks.insert(p);
    return p;
  }
  if (void* p = m_blocks.take(rounded)) return p;
  void* p = nullptr;
  cudaError_t e = cudaSuccess;
  // Out of memory: the cached blocks back to the device, then the step graph's too (the order
  // and the reason: cuda_alloc_retry.h).
  cudabk::AllocRetry retry;
  retry.attempt = [&] {
    e = cudaMalloc(&p, rounded);
    if (e != cudaErrorMemoryAllocation) return true;
    cudaGetLastError();
    return false;
  };
  retry.emptyCache = [this] {
    synchronize("allocate (waiting to free the cache)");
    m_blocks.drain([this](void* block, std::size_t) {
      checkCuda(cudaFree(block), "allocate (freeing the cache)");
    });
  };
  retry.dropGraph = [this] {
    if (!m_graph || m_graphMode != cudabk::GraphMode::Eager) return false;
    releaseGraph();  // its blocks go to the general cache; the trainer records a new graph
    ++m_graphsDroppedForMemory;
    return true;
  };
  cudabk::allocateWithRetry(retry);
  if (e != cudaSuccess) {
    const auto snap = m_memory.snapshot();
    checkCuda(e, "allocate", std::to_string(rounded) + " bytes with " +
                                 std::to_string(snap.totalCurrent) + " bytes in tensors");
  }
  return p;
}

void CudaBackend::freeBytes(void* p, std::size_t bytes) {
  if (!p) return;
  const std::size_t rounded = roundedSize(bytes);
  {
    // Freed while capturing (the graph may have used it before the free) or the graph's own:
    // kept for the graph, which rewrites it at every replay.
    std::lock_guard lock(m_graphBlocksMutex);
    if (capturing() || m_graphBlocks.count(p)) {
      m_graphBlocks.insert(p);
      m_graphCache.keep(p, rounded);
      return;
    }
  }
  m_blocks.keep(p, rounded);  // no cap: cudaFree would synchronise the device
}

void* CudaBackend::scratch(std::size_t bytes) {
  refuseWhileCapturing("a result read back at once");
  if (bytes > m_scratchBytes) {
    synchronize("scratch");
    void* old = m_scratch;
    m_scratch = nullptr;
    m_scratchBytes = 0;
    checkCuda(cudaFree(old), "free scratch");
    checkCuda(cudaMalloc(&m_scratch, bytes), "allocate scratch");
    m_scratchBytes = bytes;
  }
  checkCuda(cudaMemsetAsync(m_scratch, 0, bytes, m_stream), "clear scratch");
  return m_scratch;
}

void CudaBackend::download(void* host, const void* device, std::size_t bytes, const char* op) {
  refuseWhileCapturing(op);
  checkCuda(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, m_stream), op);
  synchronize(op);
}

void CudaBackend::uploadFloat(Tensor& dst, std::span<const float> src) {
  useDevice();
  if (dst.channelsLast()) {  // the host speaks the logical order: upload, then transpose
    Tensor scratch = empty(dst.shape(), dst.dtype(), MemCategory::Workspace);
    uploadFloat(scratch, src);
    return convertFormatInto(scratch, dst);
  }
  refuseWhileCapturing("a copy from host memory");
  if (static_cast<std::int64_t>(src.size()) != dst.numel())
    throw std::invalid_argument("upload: size mismatch for " + shapeString(dst.shape()));
  const int code = floatCode(dst, "uploadFloat");
  // Pageable host memory: cudaMemcpyAsync returns once it has staged the source, so the
  // temporary may go at once.
  if (code == 0) {
    checkCuda(cudaMemcpyAsync(dst.rawData(), src.data(), src.size() * 4, cudaMemcpyHostToDevice,
                              m_stream),
              "upload", shapeString(dst.shape()));
    return;
  }
  std::vector<std::uint16_t> bits(src.size());
  for (std::size_t i = 0; i < src.size(); ++i)
    bits[i] = code == 1 ? floatToHalfBits(src[i]) : floatToBf16Bits(src[i]);
  checkCuda(cudaMemcpyAsync(dst.rawData(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice,
                            m_stream),
            "upload", shapeString(dst.shape()));
}

void CudaBackend::uploadInt(Tensor& dst, std::span<const std::int32_t> src) {
  useDevice();
  if (dst.channelsLast()) {  // the host speaks the logical order: upload, then transpose
    Tensor scratch = empty(dst.shape(), dst.dtype(), MemCategory::Workspace);
    uploadInt(scratch, src);
    return convertFormatInto(scratch, dst);
  }
  refuseWhileCapturing("a copy from host memory");
  if (dst.dtype() != DType::I32 || static_cast<std::int64_t>(src.size()) != dst.numel())
    throw std::invalid_argument("uploadInt: needs an int32 tensor of matching size");
  checkCuda(cudaMemcpyAsync(dst.rawData(), src.data(), src.size() * 4, cudaMemcpyHostToDevice,
                            m_stream),
            "upload", shapeString(dst.shape()));
}

std::vector<float> CudaBackend::toHostFloat(const Tensor& t) {
  const std::vector<std::uint8_t> bytes = toHostBytes(t);
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()) {
      case DType::F32: std::memcpy(&out[i], &bytes[i * 4], 4); break;
      case DType::F16:
      case DType::BF16: {
        std::uint16_t b;
        std::memcpy(&b, &bytes[i * 2], 2);
        out[i] = t.dtype() == DType::F16 ? halfBitsToFloat(b) : bf16BitsToFloat(b);
        break;
      }
      case DType::I32: {
        std::int32_t v;
        std::memcpy(&v, &bytes[i * 4], 4);
        out[i] = static_cast<float>(v);
        break;
      }
      case DType::U8: out[i] = bytes[i]; break;
    }
  }
  return out;
}

std::vector<std::int32_t> CudaBackend::toHostInt(const Tensor& t) {
  useDevice();
  if (t.channelsLast()) {  // the host speaks the logical order: transpose, then download
    return toHostInt(toFormat(t, MemoryFormat::Contiguous, MemCategory::Workspace));
  }
  if (t.dtype() != DType::I32) throw std::invalid_argument("toHostInt: not an int32 tensor");
  std::vector<std::int32_t> out(static_cast<std::size_t>(t.numel()));
  download(out.data(), t.rawData(), t.bytes(), "download");
  return out;
}

std::vector<std::uint8_t> CudaBackend::toHostBytes(const Tensor& t) {
  useDevice();
  if (t.channelsLast()) {  // the host speaks the logical order: transpose, then download
    return toHostBytes(toFormat(t, MemoryFormat::Contiguous, MemCategory::Workspace));
  }
  std::vector<std::uint8_t> out(t.bytes());
  if (!out.empty()) download(out.data(), t.rawData(), t.bytes(), "download");
  return out;
}

void CudaBackend::uploadBytes(Tensor& dst, std::span<const std::uint8_t> src) {
  useDevice();
  if (dst.channelsLast()) {  // the host speaks the logical order: upload, then transpose
    Tensor scratch = empty(dst.shape(), dst.dtype(), MemCategory::Workspace);
    uploadBytes(scratch, src);
    return convertFormatInto(scratch, dst);
  }
  refuseWhileCapturing("a copy from host memory");
  if (src.size() != dst.bytes())
    throw std::invalid_argument("uploadBytes: " + std::to_string(src.size()) +
                                " bytes for a tensor of " + std::to_string(dst.bytes()));
  checkCuda(cudaMemcpyAsync(dst.rawData(), src.data(), src.size(), cudaMemcpyHostToDevice,
                            m_stream),
            "upload", shapeString(dst.shape()));
}

void CudaBackend::fill(Tensor& t, float value) {
  useDevice();
  if (t.dtype() == DType::I32 || t.dtype() == DType::U8) {
    if (value != 0.f) throw std::invalid_argument("fill: integer tensors can only be zeroed");
    checkCuda(cudaMemsetAsync(t.rawData(), 0, t.bytes(), m_stream), "fill",
              shapeString(t.shape()));
    return;
  }
  cuda::launchFill(floatCode(t, "fill"), t.rawData(), t.numel(), value, m_stream);
  checkLaunch("fill", cudabk::shapes({&t}));
}

void CudaBackend::castInto(const Tensor& src, Tensor& dst) {
  useDevice();
  checks::sameFormat({&src, &dst}, "cast");
  cudabk::requireSameSize(src, dst, "cast");
  if (src.dtype() == dst.dtype()) return copyInto(src, dst);
  cuda::launchCast(floatCode(src, "cast"), src.rawData(), floatCode(dst, "cast"), dst.rawData(),
                   src.numel(), m_stream);
  checkLaunch("cast", cudabk::shapes({&src, &dst}));
}

void CudaBackend::copyInto(const Tensor& src, Tensor& dst) {
  useDevice();
  checks::sameFormat({&src, &dst}, "copy");
  if (src.dtype() != dst.dtype() || src.numel() != dst.numel())
    throw std::invalid_argument("copy: tensors differ in dtype or size");
  checkCuda(cudaMemcpyAsync(dst.rawData(), src.rawData(), src.bytes(), cudaMemcpyDeviceToDevice,
                            m_stream),
            "copy", cudabk::shapes({&src}));
}

void CudaBackend::accumulate(Tensor& dst, const Tensor& src) {
  useDevice();
  checks::sameFormat({&src, &dst}, "accumulate");
  cudabk::requireSameSize(src, dst, "accumulate");
  cuda::launchAccumulate(floatCode(dst, "accumulate"), dst.rawData(), floatCode(src, "accumulate"),
                         src.rawData(), src.numel(), m_stream);
  checkLaunch("accumulate", cudabk::shapes({&dst, &src}));
}

void CudaBackend::scaleInPlace(Tensor& t, float factor) {
  useDevice();
  cuda::launchScale(floatCode(t, "scale"), t.rawData(), t.numel(), factor, m_stream);
  checkLaunch("scale", cudabk::shapes({&t}));
}

void CudaBackend::roundThrough(Tensor& t, DType through) {
  if (t.dtype() != DType::F32) throw std::invalid_argument("roundThrough: needs an fp32 tensor");
  if (through != DType::F16 && through != DType::BF16) return;
  // A deferred rounding settled in the step's AMP tail (before a clip without a scaler) is part
  // of a replayed step: the graph has the kernel, the replay checks it is the same tensor.
  if (replaying() || (capturing() && m_graphTail)) {
    stepCheck("round through", {static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(t.rawData())),
                                t.numel(), static_cast<std::int64_t>(through)});
    if (replaying()) return;
  }
  useDevice();
  cuda::launchRoundThrough(t.data<float>(), t.numel(), static_cast<int>(through), m_stream);
  checkLaunch("round through", cudabk::shapes({&t}));
}

void CudaBackend::setElement(Tensor& t, std::int64_t index, float value) {
  useDevice();
  if (t.channelsLast() && index >= 0 && index < t.numel()) {  // a logical (NCHW) index
    const std::int64_t planeSize = t.dim(2) * t.dim(3);
    index = planeOffset<std::int64_t>(true, index / planeSize, index % planeSize, t.dim(1),
                                      planeSize);
  }
  refuseWhileCapturing("a copy from host memory");
  if (index < 0 || index >= t.numel()) throw std::out_of_range("setElement: index out of range");
  const int code = floatCode(t, "setElement");
  // One element, converted on the host with the shared code and copied into place.
  const std::uint32_t bits = code == 0   ? floatBits(value)
                             : code == 1 ? floatToHalfBits(value)
                                         : floatToBf16Bits(value);
  const std::size_t size = code == 0 ? 4 : 2;
  std::uint8_t bytes[4];
  if (size == 4) std::memcpy(bytes, &bits, 4);
  else {
    const std::uint16_t b16 = static_cast<std::uint16_t>(bits);
    std::memcpy(bytes, &b16, 2);
  }
  checkCuda(cudaMemcpyAsync(static_cast<std::uint8_t*>(t.rawData()) + index * size, bytes, size,
                            cudaMemcpyHostToDevice, m_stream),
            "setElement", cudabk::shapes({&t}));
  synchronize("setElement");  // `bytes` lives on this stack frame
}

}  // namespace amp
