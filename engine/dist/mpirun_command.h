// How this machine starts N ranks: Open MPI's mpirun and the options every launch needs. Shared by
// the CLI (--ranks, a preset's variant with dist.ranks) and the app (the Ranks setting).
#pragma once

#include <string>
#include <vector>

namespace amp {

// mpirun's path (the PATH's, then /usr/bin, /usr/local/bin), or "" when Open MPI's launcher is
// not installed.
std::string findMpirun();

// {mpirun, "-np", N, options...}: more ranks than cores is allowed (a 2-core machine runs 2 or 3),
// and as root Open MPI needs consent to start at all. The program and its arguments follow.
std::vector<std::string> mpirunCommand(const std::string& mpirun, int ranks);

}  // namespace amp
