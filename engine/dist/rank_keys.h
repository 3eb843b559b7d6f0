// The keys that name a rank (dist.inject_rank, dist.kill_rank) must name one the run has: a rank
// it does not have would act nowhere, silently (an overflow lesson without its overflow). One
// check for the CLI and the app, for runs on one rank as for runs on several.
#pragma once

#include <optional>
#include <string>

#include "engine/config/run_config.h"

namespace amp {

// The one-line error naming the key, or nothing when both keys are -1 or one of the run's ranks.
std::optional<std::string> rankKeysError(const RunConfig& c);

}  // namespace amp
