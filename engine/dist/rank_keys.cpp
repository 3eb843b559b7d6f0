#include "engine/dist/rank_keys.h"

namespace amp {

std::optional<std::string> rankKeysError(const RunConfig& c) {
  const int n = c.dist.ranks;
  const std::string where = " in a run on " + std::to_string(n) + (n == 1 ? " rank (" : " ranks (") + "ranks 0 to " +
                            std::to_string(n - 1);
  if (c.dist.injectRank >= n)
    return "dist.inject_rank=" + std::to_string(c.dist.injectRank) + ": no such rank" + where + "; -1: every rank)";
  if (c.dist.killRank >= n)
    return "dist.kill_rank=" + std::to_string(c.dist.killRank) + ": no such rank" + where + "; -1: none)";
  return std::nullopt;
}

}  // namespace amp
