// Row-major GEMMs through cuBLASLt: one handle and one workspace per owner, a plan (descriptors
// and the heuristic's algorithm) cached per shape and dtype. fp32 with fp32 compute (TF32 only
// when asked), fp16/bf16 inputs with fp32 compute and fp32 or 16-bit output, bias fused as the
// BIAS epilogue when its dtype is the output's; stacks of matrices as one strided-batched call
// (GemmShape::batch). Failures throw std::runtime_error naming the shapes and cuBLAS's status
// string. No CUDA types in this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kernels/cuda/cuda_kernels.h"

namespace amp::cuda {

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;  // c (m, n) = op(a) (m, k) . op(b) (k, n)
  // Strided-batched: `batch` such products over contiguous stacks of a, b and c (c[i] =
  // op(a[i]) . op(b[i]), each matrix right after the previous one): attention's bmm. No bias.
  std::int64_t batch = 1;
  bool transA = false, transB = false;
  int inCode = 0, outCode = 0;       // dtype codes: a and b, c
  bool tf32 = false;                 // fp32 inputs may use TF32 tensor cores
  bool withBias = false;             // a bias (n) of the output's dtype, fused
  // May split-K partial sums be added in the output's 16-bit dtype (cuBLASLt's INPLACE and
  // OUTPUT_TYPE reduction schemes)? Off: only schemes that keep them in fp32.
  bool reducedPrecisionReduction = false;
  std::string text() const;          // "(m x k) . (k x n) -> fp16" for messages ("8 x ..." batched)
};

class CublasLtGemm {
 public:
  CublasLtGemm();  // creates the handle and the workspace on the current device
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  void run(const GemmShape& shape, const void* a, const void* b, const void* bias, void* c,
           Stream s);
  std::size_t workspaceBytes() const { return m_workspaceBytes; }

 private:
  struct Plan;
  using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, int, int, int,
                         int, int, int>;
  Plan& planFor(const GemmShape& shape);

  void* m_handle = nullptr;
  void* m_workspace = nullptr;
  std::size_t m_workspaceBytes = 0;
  std::map<Key, std::unique_ptr<Plan>> m_plans;
};

}  // namespace amp::cuda
