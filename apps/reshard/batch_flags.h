// The executor's batch knobs, the same flags with the same defaults in `run`, `verify --execute` and
// `simulate` (the policy itself, its bounds and message cap: reshard/core/batch_policy.h).
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include "reshard/core/batch_policy.h"
#include "reshard/core/error.h"
#include "reshard/core/units.h"

namespace reshard::cli {

struct BatchFlags {
  BatchPolicy policy;
  // As text (K/M/G suffixes); the defaults are the policy's.
  std::string batch_bytes = size_text(BatchPolicy{}.batch_bytes),
              staging_bytes = size_text(BatchPolicy{}.staging_bytes);
  bool window_per_stream = false, window_per_rank = false;  // given: the one wins; neither: the policy's
  bool side_stream_packs = false, op_stream_packs = false;   // likewise
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
  auto* stream = cmd.add_flag("--window-per-stream", f.window_per_stream,
                              "A window per stream (the default): a stage's batches wait only behind its own stream's");
  cmd.add_flag("--window-per-rank", f.window_per_rank, "One window for all of a rank's batches")->excludes(stream);
  auto* side = cmd.add_flag("--side-stream-packs", f.side_stream_packs,
                            "GPU: dequants and packs of sends on a stream of their own beside the op's (the "
                            "default), overlapping the batches queued there");
  cmd.add_flag("--op-stream-packs", f.op_stream_packs,
               "GPU: dequants and packs of sends queued on the op's stream, behind its earlier batches")
      ->excludes(side);
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
  if (f.window_per_stream) p.per_stream_window = true;
  if (f.window_per_rank) p.per_stream_window = false;
  if (f.side_stream_packs) p.side_stream_packs = true;
  if (f.op_stream_packs) p.side_stream_packs = false;
  return p;
}

}  // namespace reshard::cli
