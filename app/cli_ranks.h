// The CLI as one rank of a data-parallel run: `mpirun -np N ampstudio-cli run ...` starts N of
// them (Open MPI from Debian), and `ampstudio-cli run --ranks N` starts that for the user.
#pragma once

#include <string>
#include <vector>

#include "app/cli_main.h"
#include <memory>

#include "engine/backend/backend.h"
#include "engine/config/run_config.h"
#include "engine/dist/communicator.h"

namespace amp::cli {

// This process's rank and the number of ranks, from what mpirun sets in the environment (no MPI
// call: rank 0 decides about folders before anything is initialised). 0 and 1 outside mpirun.
int launchedRank();
int launchedRanks();

// The process's communicator: Open MPI's (initialised on first use, finalised at exit) when
// mpirun started more than one rank, else one process. timeoutS limits every collective: one
// that takes longer prints which on which rank and ends every rank (MPI_Abort), since a rank that
// died would otherwise leave the others waiting for ever.
Communicator& processCommunicator(double timeoutS);

// A rank's backend: where the config's backend is a GPU, the GPU of this rank's place on its
// machine (local rank modulo the devices: one GPU per rank where there are enough, several ranks
// sharing one where there are not, which then all-reduce through host memory); nullptr: the
// config's own choice (one process, or the CPU).
std::unique_ptr<Backend> rankBackend(const RunConfig& config);

// `run --ranks N ...`: the same command under mpirun with N ranks (exec: returns only when that
// fails, with the exit code, after one line saying what is missing).
// `alreadySaid`: the lines this process printed while checking the input (notes such as "--set
// amp.mode chooses ..."), which the ranks, reading the same input, print again: not shown twice.
int relaunchUnderMpirun(int ranks, const Args& runArgs, const std::vector<std::string>& alreadySaid = {});

// One variant of a preset with dist.ranks > 1 (the two-workers lesson's 2_ranks): `mpirun -np N
// ampstudio-cli run CONFIG --out DIR` as a child process, its progress on this stderr. Returns
// its exit code (0 done, 1 diverged); throws std::runtime_error with one line when it could not
// run or failed.
int runVariantOnRanks(const RunConfig& config, const std::string& dir, bool quiet);

}  // namespace amp::cli
