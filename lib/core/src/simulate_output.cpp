// `reshard simulate`'s output: the JSON document and the text table of a SimResult (simulate.h).
#include <algorithm>
#include <cstdio>
#include <string>

#include "reshard/core/simulate.h"
#include "reshard/core/units.h"

namespace reshard {

nlohmann::ordered_json simulation_json(const Plan& plan, const SimResult& r) {
  using nlohmann::ordered_json;
  const SystemModel& m = r.model;
  const double floor = std::max(r.nvlink_floor.seconds, r.nic_floor.seconds);
  auto par = [](const Parallelism& p) {
    return ordered_json{{"num_gpus", p.num_gpus}, {"tp", p.tp}, {"pp", p.pp}, {"ep", p.ep}, {"etp", p.etp}, {"dp", p.dp}};
  };
  ordered_json phases = ordered_json::array();
  for (const SimPhase& p : r.phases)
    phases.push_back({{"phase", p.name},
                      {"time_ms", p.seconds * 1e3},
                      {"slowest_rank", p.slowest_rank},
                      {"batches", p.batches},
                      {"ops", p.ops},
                      {"copies", p.copies},
                      {"launches", p.launches},
                      {"wait_ms", p.wait_seconds * 1e3},
                      {"switches", p.switches},
                      {"shared_copy_bytes", p.shared_copy_bytes},
                      {"shared_copy_ms", p.shared_copy_seconds * 1e3},
                      {"bound", p.shared_bound ? "shared-memory" : "rank"}});
  ordered_json system{{"name", m.name},
                      {"gpus_per_node", m.gpus_per_node},
                      {"nvlink_gbps", m.nvlink_gbps},
                      {"nic_gbps", m.nic_gbps},
                      {"nvlink_latency_us", m.nvlink_latency_us},
                      {"nic_latency_us", m.nic_latency_us},
                      {"launch_us", m.launch_us},
                      {"per_op_us", m.per_op_us},
                      {"copy_gbps", m.copy_gbps},
                      {"shared_copy_gbps", m.shared_copy_gbps},
                      {"wire_copies", m.wire_copies},
                      {"per_copy_us", m.per_copy_us},
                      {"per_launch_us", m.per_launch_us},
                      {"box_ops", m.box_ops},
                      {"serial_packs", m.serial_packs},
                      {"kernel_packs", m.kernel_packs},
                      {"sender_copies", m.sender_copies},
                      {"ipc_mode", m.ipc_push ? "push" : "pull"},
                      {"serial_issue", m.serial_issue},
                      {"switch_us", m.switch_us},
                      {"slice_us", m.slice_us},
                      {"linear_broadcast_max", m.linear_broadcast_max},
                      {"binomial_broadcast_min", m.binomial_broadcast_min},
                      {"fan_gbps", m.fan_gbps},
                      {"host_cores", m.host_cores},
                      {"latency_per_busy_rank", m.latency_per_busy_rank}};
  system.update(batch_policy_json(m.batch));  // the same keys as run --json's "arguments"
  system["algo"] = to_string(m.algo);
  return ordered_json{
      {"format", "reshard-simulate"},
      {"version", 1},
      {"plan",
       {{"fingerprint", plan.fingerprint},
        {"model", plan.model_name},
        {"train", par(plan.system.train)},
        {"gen", par(plan.system.gen)},
        {"transfers", plan.transfers.size()},
        {"fanouts", plan.fanouts.size()},
        {"buckets", plan.buckets.size()}}},
      {"system", system},
      {"phases", phases},
      {"bulk_time_ms", r.bulk_seconds * 1e3},
      {"misc_time_ms", r.misc_seconds * 1e3},
      {"sequential_time_ms", r.sequential_seconds * 1e3},
      {"total_time_ms", r.total_seconds * 1e3},
      {"total_switches", r.total_switches},
      {"slowest_rank", r.slowest_rank},
      {"slowest_rank_batches", r.slowest_rank_batches},
      {"slowest_rank_wait_ms", r.slowest_rank_wait_seconds * 1e3},
      {"floors",
       {{"nvlink_ms", r.nvlink_floor.seconds * 1e3},
        {"nvlink_bulk_ms", r.nvlink_floor.bulk_seconds * 1e3},
        {"nvlink_misc_ms", r.nvlink_floor.misc_seconds * 1e3},
        {"nic_ms", r.nic_floor.seconds * 1e3},
        {"nic_bulk_ms", r.nic_floor.bulk_seconds * 1e3},
        {"nic_misc_ms", r.nic_floor.misc_seconds * 1e3},
        {"predicted_over_floor", floor > 0 ? r.total_seconds / floor : 1.0}}},
      {"busiest_link",
       {{"rank", r.busiest_rank},
        {"resource", to_string(r.busiest_link)},
        {"bytes", r.busiest_link_bytes},
        {"time_ms", r.busiest_link_seconds * 1e3}}},
      {"nvlink_bytes", r.nvlink_bytes},
      {"nic_bytes", r.nic_bytes},
      {"copy_bytes", r.copy_bytes},
      {"lower_bound_bytes", r.lower_bound_bytes},
      {"lower_bound_time_ms", r.lower_bound_seconds * 1e3},
      {"predicted_over_lower_bound", r.lower_bound_seconds > 0 ? r.total_seconds / r.lower_bound_seconds : 1.0}};
}

std::string format_simulation(const Plan& plan, const SimResult& r) {
  const SystemModel& m = r.model;
  std::string out;
  char buf[512];
  auto line = [&](const char* fmt, auto... xs) {
    std::snprintf(buf, sizeof buf, fmt, xs...);
    out += buf;
  };
  line("# reshard simulate: %s, %d train + %d gen ranks, fingerprint %s\n", plan.model_name.c_str(),
       plan.train_world(), plan.gen_world(), plan.fingerprint.c_str());
  const std::string domain = m.gpus_per_node >= plan.world()
                                 ? std::string("one NVLink domain holds every rank")
                                 : std::to_string(m.gpus_per_node) + " GPUs per NVLink domain";
  line("#  system %s: %s, NVLink %.1f GB/s, NIC %.1f GB/s (per direction per GPU)\n", m.name.c_str(), domain.c_str(),
       m.nvlink_gbps, m.nic_gbps);
  line("#  latency %.1f us NVLink / %.1f us NIC, launch %.1f us, per op %.2f us; streams %d, batch %lld ops / %s, window %d%s\n",
       m.nvlink_latency_us, m.nic_latency_us, m.launch_us, m.per_op_us, m.batch.streams, static_cast<long long>(m.batch.batch_ops),
       format_bytes(m.batch.batch_bytes).c_str(), m.batch.window, m.batch.per_stream_window ? " per stream" : " per rank");
  if (plan.options.gpus_per_node > 0 && plan.options.gpus_per_node != m.gpus_per_node)
    line("#  warning: the plan's fan-outs were made for %d GPUs a node (--gpus-per-node), this system has %lld\n",
         plan.options.gpus_per_node, static_cast<long long>(m.gpus_per_node));
  if (m.copy_gbps > 0)
    line("#  copies %.1f GB/s per rank, %.1f GB/s shared per domain, %.2f per received byte, %.2f us each, "
         "%.2f us per launch%s%s; algo %s\n",
         m.copy_gbps, m.shared_copy_gbps, m.wire_copies, m.per_copy_us, m.per_launch_us,
         m.box_ops ? (m.ipc_push ? ", box ops, cuda-ipc push" : ", box ops, cuda-ipc pull") : "",
         m.serial_issue ? ", serial issue" : "", to_string(m.algo));
  if (m.copy_gbps > 0 && m.serial_packs && !m.box_ops)
    line(!m.kernel_packs ? "#  packs and unpacks in line with their batch; a pack just before its op is posted, beside "
                           "the earlier batches' wire\n"
         : m.batch.side_stream_packs
             ? "#  packs and unpacks in line with their batch; a pack kernel on a side stream, beside the earlier "
               "batches' wire, behind the rank's earlier packs\n"
             : "#  packs and unpacks in line with their batch; a pack kernel queued on its op's stream behind the "
               "batches flushed there before (--op-stream-packs)\n");
  if (m.sender_copies)
    line("#  no single copy: each rank's sends and receives share its link, and its transfers stand still while it "
         "packs\n");
  if (m.fan_gbps > 0)
    line("#  broadcast sends at once: the first at the link's rate, each further one %.2f GB/s; a binomial member "
         "forwards once it holds the whole message\n",
         m.fan_gbps);
  if (transfer_share(m, plan.world()) < 1) {
    const auto ranks = static_cast<long long>(domain_ranks(m, plan.world()));
    const auto cores = static_cast<long long>(m.host_cores);
    line("#  %lld ranks a domain on %lld cores: each rank's transfers move at %lld/%lld of their rate (copy-in/copy-out "
         "needs both ends running)\n",
         ranks, cores, cores, ranks);
  }
  if (m.latency_per_busy_rank)
    line("#  latency is the busy hand-off with every rank working: a phase pays it x its domain's working ranks "
         "/ its ranks\n");
  if (m.serial_issue && m.switch_us > 0 && m.slice_us > 0)
    line("#  context switch %.2f us, %.1f us time slice: the transport passes take turns on the GPU where two "
         "or more ranks of a domain launch copies\n",
         m.switch_us, m.slice_us);
  else if (m.serial_issue && m.switch_us > 0)
    line("#  context switch %.2f us per transport pass where two or more ranks of a domain launch copies\n",
         m.switch_us);
  line("#\n#%-27s %12s %13s %9s %10s %8s %8s\n", " phase", "time_ms", "slowest_rank", "batches", "ops",
       "copies", "launches");
  for (const SimPhase& p : r.phases)
    line(" %-27s %12.3f %13d %9lld %10lld %8lld %8lld%s\n", p.name.c_str(), p.seconds * 1e3, p.slowest_rank,
         static_cast<long long>(p.batches), static_cast<long long>(p.ops), static_cast<long long>(p.copies),
         static_cast<long long>(p.launches), p.shared_bound ? "  (shared memory bound)" : "");
  line(" %-27s %12.3f\n", "bulk (all stages)", r.bulk_seconds * 1e3);
  line(" %-27s %12.3f\n", "sequential (bulk, then misc)", r.sequential_seconds * 1e3);
  line(" %-27s %12.3f %13d %9lld\n", "total (executor order)", r.total_seconds * 1e3, r.slowest_rank,
       static_cast<long long>(r.slowest_rank_batches));
  // Each batch's wait is what it took past the rank's own traffic: the ops it posted before and the bytes
  // it posted meanwhile, on every lane (Replayer::flush).
  line("# rank %d waited %.3f ms of that on ranks that posted their part of an op later\n", r.slowest_rank,
       r.slowest_rank_wait_seconds * 1e3);
  const double floor = std::max(r.nvlink_floor.seconds, r.nic_floor.seconds);
  line("# floors (busiest link of the class, the schedule's bytes): NIC %.3f ms (bulk %.3f, misc %.3f), "
       "NVLink %.3f ms (bulk %.3f, misc %.3f); predicted total is %.2fx the higher\n",
       r.nic_floor.seconds * 1e3, r.nic_floor.bulk_seconds * 1e3, r.nic_floor.misc_seconds * 1e3,
       r.nvlink_floor.seconds * 1e3, r.nvlink_floor.bulk_seconds * 1e3, r.nvlink_floor.misc_seconds * 1e3,
       floor > 0 ? r.total_seconds / floor : 1.0);
  for (const SimPhase& p : r.phases)
    if (p.switches > 0)
      line("# %s: %lld context switches over the domain's ranks\n", p.name.c_str(),
           static_cast<long long>(p.switches));
  if (r.total_switches > 0)
    line("# total (executor order): %lld context switches over the domain's ranks\n",
         static_cast<long long>(r.total_switches));
  line("# busiest link: rank %d %s, %s, %.3f ms of wire time\n", r.busiest_rank, to_string(r.busiest_link),
       format_bytes(r.busiest_link_bytes).c_str(), r.busiest_link_seconds * 1e3);
  line("# bytes over NVLink %s, over NICs %s, copied in memory %s\n", format_bytes(r.nvlink_bytes).c_str(),
       format_bytes(r.nic_bytes).c_str(), format_bytes(r.copy_bytes).c_str());
  if (r.lower_bound_bytes <= 0 || r.lower_bound_seconds <= 0)  // nothing bulk: no ratio to speak of
    line("# lower bound: 0 B on the busiest rank (no bulk bytes); the prediction is latency and misc only\n");
  else
    line("# lower bound: %s on the busiest rank (plan), %.3f ms on this system; predicted total is %.2fx that\n",
         format_bytes(r.lower_bound_bytes).c_str(), r.lower_bound_seconds * 1e3, r.total_seconds / r.lower_bound_seconds);
  return out;
}

}  // namespace reshard
