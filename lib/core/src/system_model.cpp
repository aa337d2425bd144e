// The system model's checks and the share of its link rates oversubscribed ranks keep (simulate.h).
#include <cmath>
#include <cstdio>
#include <string>

#include "reshard/core/simulate.h"

namespace reshard {

const char* to_string(LinkResource r) {
  switch (r) {
    case LinkResource::NvlinkSend: return "nvlink-send";
    case LinkResource::NvlinkRecv: return "nvlink-recv";
    case LinkResource::NicSend: return "nic-send";
    case LinkResource::NicRecv: return "nic-recv";
  }
  return "?";
}

double transfer_share(const SystemModel& m, int world) {
  const int64_t ranks = domain_ranks(m, world);
  if (!m.sender_copies || m.host_cores <= 0 || ranks <= m.host_cores) return 1;
  return static_cast<double>(m.host_cores) / static_cast<double>(ranks);
}

void validate_system_model(const SystemModel& m, Problems& problems) {
  // Rates up to 1e12 GB/s (tests use 1e9 for "free") and times up to 1 s (1e6 us): beyond, a value is
  // a typo, and would print as a 300-digit number.
  auto shown = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  auto check = [&](double v, const char* what, bool zero_ok, double least, double most, const char* unit) {
    if (!(zero_ok ? v >= 0 : v > 0) || !std::isfinite(v))
      problems.add(std::string(what) + (zero_ok ? " must be non-negative, got " : " must be positive, got ") + shown(v));
    else if (v > most)
      problems.add(std::string(what) + " must be at most " + shown(most) + unit + ", got " + shown(v));
    else if (v > 0 && v < least)  // bytes / rate would leave the doubles' range: times inf, ratios nan
      problems.add(std::string(what) + " must be " + (zero_ok ? "0 or " : "") + "at least " + shown(least) + unit +
                   ", got " + shown(v));
  };
  auto rate = [&](double v, const char* what, bool zero_ok) { check(v, what, zero_ok, 1e-6, 1e12, " GB/s"); };
  auto time_us = [&](double v, const char* what) { check(v, what, true, 0, 1e6, " us"); };
  if (m.gpus_per_node < 1) problems.add("--gpus-per-node must be at least 1, got " + std::to_string(m.gpus_per_node));
  rate(m.nvlink_gbps, "--nvlink-gbps", false);
  rate(m.nic_gbps, "--nic-gbps", false);
  if (m.nvlink_latency_us == m.nic_latency_us) {
    time_us(m.nvlink_latency_us, "--latency-us");
  } else {
    time_us(m.nvlink_latency_us, "--nvlink-latency-us");
    time_us(m.nic_latency_us, "--nic-latency-us");
  }
  time_us(m.launch_us, "--launch-us");
  time_us(m.per_op_us, "--per-op-us");
  rate(m.copy_gbps, "--copy-gbps", true);
  rate(m.shared_copy_gbps, "--shared-copy-gbps", true);
  check(m.wire_copies, "--wire-copies", true, 0, 1e6, "");
  time_us(m.per_copy_us, "--per-copy-us");
  time_us(m.per_launch_us, "--per-launch-us");
  time_us(m.switch_us, "--switch-us");
  time_us(m.slice_us, "--slice-us");
  rate(m.fan_gbps, "--fan-gbps", true);
  if (m.host_cores < 0) problems.add("--host-cores must be non-negative, got " + std::to_string(m.host_cores));
  else if (m.host_cores > 0 && !m.sender_copies)
    problems.add("--host-cores " + std::to_string(m.host_cores) +
                 " applies only without single copy (--sender-copies): with it the receiver copies alone");
  m.batch.validate(problems);  // the executor's bounds (batch_policy.h)
}

}  // namespace reshard
