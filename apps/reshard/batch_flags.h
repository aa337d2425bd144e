// The executor's batch knobs, the same flags with the same defaults in `run`, `verify --execute` and
// `simulate` (the policy itself, its bounds and message cap: reshard/core/batch_policy.h).
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "reshard/core/batch_policy.h"
#include "reshard/core/error.h"
#include "reshard/core/units.h"

namespace reshard::cli {

struct BatchFlags {
  BatchPolicy policy;
  std::string batch_bytes = "256Mi", staging_bytes = "256Mi";
};

inline void add_batch_flags(CLI::App& cmd, BatchFlags& f) {
  cmd.add_option("--streams", f.policy.streams, "Streams; train PP stage s runs on stream s % N")
      ->capture_default_str();
  cmd.add_option("--batch-ops", f.policy.batch_ops, "Most ops posted per batch")->capture_default_str();
  cmd.add_option("--batch-bytes", f.batch_bytes, "Most bytes posted per batch (K/M/G or Ki/Mi/Gi)")
      ->capture_default_str();
  cmd.add_option("--staging-bytes", f.staging_bytes, "Staging buffer for strided boxes (K/M/G or Ki/Mi/Gi)")
      ->capture_default_str();
  cmd.add_option("--window", f.policy.window,
                 "Batches in flight per rank: the open one and N-1 posted, not yet waited for")
      ->capture_default_str();
  cmd.add_flag("--window-per-stream", f.policy.per_stream_window,
               "A window per stream instead of per rank: a stage's batches wait only behind its own stream's");
}

// The policy the flags give; every bad value goes to `problems`.
inline BatchPolicy resolve_batch_flags(const BatchFlags& f, Problems& problems) {
  BatchPolicy p = f.policy;
  auto size = [&](const std::string& text, const char* flag, int64_t& out) {
    try {
      out = parse_size(text, flag);
    } catch (const Error& e) {
      problems.add(e.what());
    }
  };
  size(f.batch_bytes, "--batch-bytes", p.batch_bytes);
  size(f.staging_bytes, "--staging-bytes", p.staging_bytes);
  return p;
}

}  // namespace reshard::cli
