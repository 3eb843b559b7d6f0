// The ranks of a data-parallel run, as the trainer needs them: who am I, how many are we, and the
// few collectives DDP and GradScaler need (sum and broadcast, a gather for rank 0's record). The
// engine knows only this interface; Open MPI's implementation lives beside the CLI that mpirun
// starts (app/cli_mpi_communicator.cpp), so nothing else links MPI. One process alone is
// SingleProcess: every collective is the identity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace amp {

// A collective that did not complete (a rank died, hangs, or the transport failed): one line
// saying which operation, on which rank, after how long.
class CommunicatorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "Open MPI 4.1.4, 2 ranks on 1 host", "one process"
  virtual std::string description() const = 0;
  // How long a collective may take before this rank gives up on the others (dist.timeout_s);
  // 0: no limit. Transports beside this one (NCCL on the devices) wait no longer than this.
  virtual double timeoutSeconds() const { return 0; }

  // Element-wise sum over the ranks, in place, the same result on every rank.
  virtual void allReduceSum(std::span<float> data, const char* what) = 0;
  virtual void allReduceSum(std::span<double> data, const char* what) = 0;
  // root's bytes on every rank.
  virtual void broadcast(std::span<std::uint8_t> data, int root, const char* what) = 0;
  // Every rank's `values` (all the same length) on rank 0, rank by rank; other ranks get {}.
  virtual std::vector<double> gatherToRoot(std::span<const double> values, const char* what) = 0;
};

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string description() const override { return "one process"; }
  void allReduceSum(std::span<float>, const char*) override {}
  void allReduceSum(std::span<double>, const char*) override {}
  void broadcast(std::span<std::uint8_t>, int, const char*) override {}
  std::vector<double> gatherToRoot(std::span<const double> v, const char*) override {
    return {v.begin(), v.end()};
  }
};

}  // namespace amp
