// Weights-only exports: a model's parameters and buffers in one float dtype, as a safetensors
// file PyTorch reads (safetensors.torch.load_file, then load_state_dict): what saving
// `model.half().state_dict()` gives. Keys are the state_dict's; float tensors are converted with
// round-to-nearest-even (fp32 -> fp16 overflows to inf past 65504, as .half() does), integer
// buffers (num_batches_tracked) are kept. A training checkpoint holds fp32 master weights and the
// optimizer's state, so it stays about as large under AMP as in fp32; this file is the one a
// 16-bit run can make half as large (the seeds' "checkpoint 90 MB vs 46 MB").
#pragma once

#include <QByteArray>
#include <string>
#include <vector>

#include "engine/io/safetensors.h"

namespace amp {

// The tensors converted to `dtype` (F32, F16 or BF16) and written as safetensors, with metadata
// {"format": "pt", "dtype": "fp16", "source": source} (the checkpoint's file name, "step-N.zip"). Throws SafetensorsError for a non-float
// target dtype or a tensor that cannot be converted.
QByteArray exportWeights(const std::vector<SafeTensor>& tensors, DType dtype,
                         const std::string& source);

// How many tensors of `tensors` became inf (overflow) or 0 from non-zero (underflow) in `dtype`:
// said beside an export, since a weight beyond fp16's range does not survive .half().
struct ExportRounding {
  std::int64_t overflowed = 0, flushed = 0;
  std::string firstOverflow;  // the name of the first tensor with an overflow
};
ExportRounding exportRounding(const std::vector<SafeTensor>& tensors, DType dtype);

}  // namespace amp
