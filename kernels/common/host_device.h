// Marks per-element functions usable from both CPU code and (under nvcc) CUDA device code.
#pragma once

#if defined(__CUDACC__)
#define AMP_HD __host__ __device__
#else
#define AMP_HD
#endif
