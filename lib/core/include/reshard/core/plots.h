// Pictures of a plan and of a simulation, as standalone SVG documents (no plotting library):
// `inspect --plot FILE` (who sends how many bytes to whom) and `simulate --timeline FILE` (each
// rank's batches over time, waiting and moving). docs/cli.md shows an example of each.
#pragma once
#include <string>

#include "reshard/core/plan.h"
#include "reshard/core/simulate.h"

namespace reshard {

// Source x destination bytes (transfers, fan-out broadcasts root to member, misc buckets root to
// member), by rank when the world has at most 128 ranks, else by node of `gpus_per_node` ranks.
std::string traffic_svg(const Plan& plan, int gpus_per_node);

// One param's pieces as the plan holds them: the tensor (leading dims flattened into rows) drawn once
// for the source ranks and once for the destination ranks, each box in its holder's colour (the
// pictures of docs/layouts.md, from the plan itself). `inspect --param NAME --plot FILE`.
std::string param_svg(const Plan& plan, uint32_t param);

// The total run's batches of up to `max_ranks` ranks (every rank, or the ones that end last), each a
// grey span while it waits for its latest peer and a coloured one while its bytes move.
std::string timeline_svg(const Plan& plan, const SimResult& r, int max_ranks = 48);

}  // namespace reshard
