// Rows of a device-resident data set gathered into a batch (the trainer's device cache): one
// grid-stride pass over the batch in the widest word the row size allows, so a 4096-float row
// moves as 16-byte loads and stores.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace amp::cuda {

namespace {

template <class Word>
__global__ void gatherRowsKernel(const Word* src, const std::int32_t* rows, std::int64_t count,
                                 std::int64_t rowWords, Word* dst) {
  const std::int64_t total = count * rowWords;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / rowWords, w = i - r * rowWords;
    dst[i] = src[std::int64_t(rows[r]) * rowWords + w];
  }
}

template <class Word>
void launchAs(const void* src, const std::int32_t* rows, std::int64_t count, std::int64_t rowBytes,
              void* dst, Stream s) {
  const std::int64_t words = rowBytes / std::int64_t(sizeof(Word));
  gatherRowsKernel<Word><<<gridFor(count * words), kBlock, 0, s>>>(
      static_cast<const Word*>(src), rows, count, words, static_cast<Word*>(dst));
}

}  // namespace

void launchGatherRows(const void* src, const std::int32_t* rows, std::int64_t count,
                      std::int64_t rowBytes, void* dst, Stream s) {
  if (count <= 0 || rowBytes <= 0) return;
  // Device allocations are 256-byte aligned, so a row size that is a multiple of the word keeps
  // every row start aligned to it.
  if (rowBytes % 16 == 0) launchAs<int4>(src, rows, count, rowBytes, dst, s);
  else if (rowBytes % 4 == 0) launchAs<std::int32_t>(src, rows, count, rowBytes, dst, s);
  else if (rowBytes % 2 == 0) launchAs<std::uint16_t>(src, rows, count, rowBytes, dst, s);
  else launchAs<std::uint8_t>(src, rows, count, rowBytes, dst, s);
}

}  // namespace amp::cuda
