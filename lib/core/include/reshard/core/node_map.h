// A launch's placement against the plan's node map (PlanOptions::gpus_per_node: ranks r and s share a
// node iff r / N == s / N). The planner chose its node-aware fan-outs and misc groups for that map;
// where mpirun places the ranks otherwise every byte still lands right, but the fan-outs cross nodes
// where the plan meant NVLink (or the reverse), so `reshard run` says so before it runs the plan.
#pragma once
#include <string>
#include <vector>

namespace reshard {

struct NodeMapCheck {
  enum class Status { Unknown, Matches, Differs };
  Status status = Status::Unknown;  // Unknown: the plan has no node map (node-blind)
  int plan_gpus_per_node = 0;       // the plan's N; 0: none
  // k when the launch puts ranks 0..k-1 on one host, k..2k-1 on the next, ... (the last block may be
  // shorter): the --gpus-per-node that describes it. 0 where the hosts hold no such blocks.
  int launch_ranks_per_host = 0;
  int hosts = 0;                    // distinct hosts of the launch
  std::string detail;               // Differs: the first pair of ranks that shows it
};

// host_of_rank: each rank's host name, in rank order. gpus_per_node: the plan's, 0 for none.
NodeMapCheck check_node_map(const std::vector<std::string>& host_of_rank, int gpus_per_node);

const char* to_string(NodeMapCheck::Status s);

// What `run` prints (rank 0, to stderr) before it runs the plan: a warning where the launch differs
// from the plan's map, a hint where a node-blind plan runs over several hosts in blocks; else "".
std::string node_map_advice(const NodeMapCheck& c);

}  // namespace reshard
