// Data-parallel training as PyTorch's DDP does it, on any backend and any Communicator: every
// rank takes its shard of each global batch (DistributedSampler's rule), starts from rank 0's
// weights, and averages the scaled gradients over the ranks after backward and before the
// scaler unscales them, so that an inf on one rank reaches every rank and all of them skip, step
// and rescale alike. The gradients travel through host memory in buckets (the path Open MPI
// takes on CPUs, and on GPUs without NCCL).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/data/batch_loader.h"
#include "engine/dist/communicator.h"
#include "engine/nn/parameter.h"
#include "engine/nn/sequential.h"

namespace amp {

// Rows rank, rank + ranks, rank + 2 ranks, ... of a global batch: over an epoch exactly the
// indices DistributedSampler gives rank `rank` (perm[rank::ranks]) in its own batches of
// batch_size / ranks, so N ranks see, step by step, the samples one rank sees. A batch with fewer
// rows than ranks leaves some ranks none (size 0).
Batch shardBatch(const Batch& global, int rank, int ranks);

// Every gradient summed over the ranks and divided by their number (in fp32; a 16-bit gradient is
// rounded once at the end): an fp32 gradient in host memory in place, one collective per tensor;
// others through host copies in buckets of at most `bucketFloats` values taken in backward order,
// as DDP's reducer fills them. A parameter without a gradient here (a rank with no rows) takes
// part with zeros and gets the average. Deferred roundings must be settled before.
void allReduceGradients(Backend& be, Communicator& comm, const std::vector<Parameter*>& backwardOrder,
                        std::size_t bucketFloats);

// Rank 0's parameters and buffers, byte for byte, on every rank.
void broadcastModel(Backend& be, Communicator& comm, Sequential& model);

// A digest of every parameter's and buffer's bytes (FNV-1a, 64 bits): equal on every rank when
// the replicas are identical.
std::uint64_t modelDigest(Backend& be, Sequential& model);

}  // namespace amp
