// 2-D convolutions (groups 1, dilation 1) through cuDNN 9's convolution API, NCHW or NHWC: one
// handle per owner, bound to the owner's stream, and one plan per (pass, geometry, dtype, TF32
// setting, layout):
// the tensor, filter and convolution descriptors plus the algorithm cuDNN's heuristics chose and
// the workspace it needs. Every tensor of one call shares one dtype (fp32, fp16 or bf16, codes
// as amp::DType); products are summed in fp32 whatever the dtype, and fp32 data never touches
// TF32 tensor cores unless the plan asks for it. No bias here: the caller adds it (and reduces
// the bias gradient) with its own kernels. Failures throw std::runtime_error naming the pass,
// the shapes, the dtype and cuDNN's status string. No cuDNN or CUDA types in this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

#include "kernels/common/conv_geometry.h"
#include "kernels/cuda/conv_plan_policy.h"
#include "kernels/cuda/cuda_kernels.h"

namespace amp::cuda {

enum class ConvPass : std::uint8_t {
  Forward,         // y (N,K,OH,OW) = x (N,C,H,W) (*) w (K,C,R,S)
  BackwardData,    // dx (N,C,H,W) from dy (N,K,OH,OW) and w
  BackwardFilter,  // dw (K,C,R,S) from x and dy
};

struct ConvProblem {
  ConvPass pass = ConvPass::Forward;
  ConvGeometry geometry;
  int code = 0;       // dtype of every operand: 0 fp32, 1 fp16, 2 bf16
  bool tf32 = false;  // fp32 operands may run on TF32 tensor cores
  // Every operand channels-last: x, y and their gradients NHWC, the filter KRSC (cuDNN's NHWC
  // filter format), the layout cuDNN's tensor-core kernels work in, so it transforms nothing.
  // Otherwise NCHW and KCRS.
  bool channelsLast = false;
  // "forward x (128, 1, 28, 28) w (32, 1, 3, 3) -> (128, 32, 28, 28), stride 1x1, pad 1x1, fp16"
  std::string text() const;
};

// cuDNN refused to run a planned algorithm (CudnnConv::run): the algorithm is held back for that
// problem a while (conv_plan_policy.h), so planning again may find another.
struct ConvRunFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Convolutions cuDNN ran, by the layout it was handed (the GPU suite asserts the channels-last
// runs really were NHWC, so a silent fallback to NCHW copies fails it).
struct ConvLayoutRuns {
  std::int64_t nhwc = 0, nchw = 0;
};

class CudnnConv {
 public:
  // Creates the handle on the current device and binds it to `stream`: every call of this
  // object is ordered on that stream, so the caller's stream-ordered workspace reuse is safe.
  explicit CudnnConv(Stream stream);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // Bytes of device workspace run() needs for this problem (plans it on first use). Throws
  // std::invalid_argument for a geometry cuDNN's 32-bit sizes cannot describe.
  std::size_t workspaceBytes(const ConvProblem& problem);

  // Whether cuDNN offers an acceptable algorithm for the problem (plans it on first use; a
  // refusal is remembered too). workspaceBytes() and run() throw where this is false.
  bool supports(const ConvProblem& problem);

  // The most workspace an algorithm may ask for (conv_plan_policy.h); plans made before a
  // change keep theirs.
  std::size_t workspaceCap() const { return m_workspaceCap; }
  void setWorkspaceCap(std::size_t bytes) { m_workspaceCap = bytes; }
  const ConvLayoutRuns& layoutRuns() const { return m_runs; }

  // Enqueues the pass. Operands, dense NCHW / KCRS (NHWC / KRSC when channelsLast) in problem.code:
  //   Forward:        in0 = x,  in1 = w,  out = y
  //   BackwardData:   in0 = dy, in1 = w,  out = dx
  //   BackwardFilter: in0 = x,  in1 = dy, out = dw
  // `out` is overwritten (beta = 0). workspace: at least workspaceBytes(problem) bytes.
  // Throws ConvRunFailed when cuDNN refuses to run the planned algorithm.
  void run(const ConvProblem& problem, const void* in0, const void* in1, void* out,
           void* workspace, std::size_t workspaceBytes);

  // The loaded library's version, "9.19.0" (for descriptions and messages).
  static std::string versionText();

 private:
  struct Plan;
  // pass, n, c, h, w, k, r, s, strideH, strideW, padH, padW, code, tf32, channelsLast
  using Key = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t, int, bool, bool>;
  static Key keyOf(const ConvProblem& problem);
  Plan& planFor(const ConvProblem& problem);
  void forget(const ConvProblem& problem);  // drops a plan whose algorithm failed to run

  void* m_handle = nullptr;  // cudnnHandle_t
  std::map<Key, std::unique_ptr<Plan>> m_plans;
  // Problems cuDNN offered nothing acceptable for: the message, and until when (for ever unless
  // only held-back algorithms were missing).
  std::map<Key, std::pair<std::string, double>> m_unsupported;
  FailedAlgorithms<Key> m_failed;
  std::size_t m_workspaceCap = 0;
  ConvLayoutRuns m_runs;
};

}  // namespace amp::cuda
