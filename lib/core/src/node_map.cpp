#include "reshard/core/node_map.h"

#include <algorithm>

namespace reshard {

NodeMapCheck check_node_map(const std::vector<std::string>& host_of_rank, int gpus_per_node) {
  NodeMapCheck c;
  c.plan_gpus_per_node = std::max(gpus_per_node, 0);
  // Hosts numbered in order of first appearance: the launch is blocks of k iff rank r is on host r / k.
  std::vector<std::string> names;
  std::vector<int> host(host_of_rank.size());
  for (size_t r = 0; r < host_of_rank.size(); ++r) {
    const auto it = std::find(names.begin(), names.end(), host_of_rank[r]);
    host[r] = static_cast<int>(it - names.begin());
    if (it == names.end()) names.push_back(host_of_rank[r]);
  }
  c.hosts = static_cast<int>(names.size());
  if (host.empty()) return c;
  const int k = static_cast<int>(std::count(host.begin(), host.end(), 0));
  bool blocks = true;
  for (size_t r = 0; r < host.size() && blocks; ++r) blocks = host[r] == static_cast<int>(r) / k;
  c.launch_ranks_per_host = blocks ? k : 0;
  if (c.plan_gpus_per_node == 0) return c;
  const int n = c.plan_gpus_per_node;
  for (size_t i = 0; i < host.size(); ++i) {
    const int r = static_cast<int>(i), node = r / n;
    if (host[i] == node) continue;
    c.status = NodeMapCheck::Status::Differs;
    if (host[i] < node) {  // an earlier node's host: the first rank there is its node's first, h * n
      const int s = host[i] * n;
      c.detail = "ranks " + std::to_string(s) + " and " + std::to_string(r) + " run on one host (" + names[host[i]] +
                 ") but the plan puts them on nodes " + std::to_string(s / n) + " and " + std::to_string(node);
    } else {  // a new host inside the node rank r - 1 is on
      c.detail = "ranks " + std::to_string(r - 1) + " and " + std::to_string(r) + " share node " +
                 std::to_string(node) + " of the plan but run on hosts " + names[host[i - 1]] + " and " +
                 names[host[i]];
    }
    return c;
  }
  c.status = NodeMapCheck::Status::Matches;
  return c;
}

const char* to_string(NodeMapCheck::Status s) {
  switch (s) {
    case NodeMapCheck::Status::Matches: return "matches";
    case NodeMapCheck::Status::Differs: return "differs";
    case NodeMapCheck::Status::Unknown: break;
  }
  return "unknown";
}

std::string node_map_advice(const NodeMapCheck& c) {
  const std::string k = std::to_string(c.launch_ranks_per_host);
  if (c.status == NodeMapCheck::Status::Differs) {
    const std::string n = std::to_string(c.plan_gpus_per_node);
    std::string fix = c.launch_ranks_per_host > 0 ? "plan with --gpus-per-node " + k + " (this launch's " + k +
                                                        " ranks a host), or "
                                                  : "";
    return "warning: this launch does not place ranks as the plan's node map says (--gpus-per-node " + n +
           ": rank r on node r / " + n + "): " + c.detail + ". Every byte still lands right, but fan-outs cross " +
           "nodes where the plan meant NVLink: " + fix + "place " + n + " consecutive ranks on each node " +
           "(Open MPI: --map-by ppr:" + n + ":node)";
  }
  if (c.status == NodeMapCheck::Status::Unknown && c.hosts > 1 && c.launch_ranks_per_host > 0)
    return "note: the plan is node-blind (made without --gpus-per-node) and this launch places " + k +
           " ranks a host on " + std::to_string(c.hosts) + " hosts: plan with --gpus-per-node " + k +
           " so that two-phase fan-outs cross each node once per byte";
  return "";
}

}  // namespace reshard
