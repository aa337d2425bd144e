// The RESHARD_FAULT test hook: see fault_hook.h.
#include "fault_hook.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "reshard/core/error.h"

namespace reshard {
namespace {

bool parse_int(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  try {
    size_t used = 0;
    out = std::stoll(s, &used, 10);
    return used == s.size() && out >= 0;
  } catch (const std::exception&) {
    return false;
  }
}

const char* mode_name(FaultSpec::Mode m) {
  switch (m) {
    case FaultSpec::Mode::Kill: return "kill";
    case FaultSpec::Mode::Hang: return "hang";
    case FaultSpec::Mode::Exit: return "exit";
    case FaultSpec::Mode::Corrupt: return "corrupt";
  }
  return "?";
}

}  // namespace

std::optional<FaultSpec> fault_from_env() {
  const char* env = std::getenv("RESHARD_FAULT");
  if (env == nullptr || *env == '\0') return std::nullopt;
  const std::string text = env;
  FaultSpec spec;
  bool have_rank = false, have_mode = false;
  Problems pr;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    int64_t n = 0;
    if (key == "rank") {
      have_rank = parse_int(value, n);
      spec.rank = static_cast<int>(n);
      if (!have_rank) pr.add("rank must be a rank number (got '" + value + "')");
    } else if (key == "after_ops") {
      if (!parse_int(value, spec.after_ops)) pr.add("after_ops must be a count >= 0 (got '" + value + "')");
    } else if (key == "mode") {
      have_mode = true;
      if (value == "kill") spec.mode = FaultSpec::Mode::Kill;
      else if (value == "hang") spec.mode = FaultSpec::Mode::Hang;
      else if (value == "exit") spec.mode = FaultSpec::Mode::Exit;
      else if (value == "corrupt") spec.mode = FaultSpec::Mode::Corrupt;
      else pr.add("mode must be kill, hang, exit or corrupt (got '" + value + "')");
    } else {
      pr.add("unknown field '" + item + "' (fields: rank, after_ops, mode)");
    }
  }
  if (!have_rank && pr.empty()) pr.add("rank=R is missing");
  if (!have_mode && pr.empty()) pr.add("mode=kill|hang|exit|corrupt is missing");
  pr.throw_if_any("RESHARD_FAULT='" + text + "' (test hook) is invalid:");
  return spec;
}

FaultTransport::FaultTransport(std::unique_ptr<Transport> inner, const FaultSpec& spec, int rank)
    : inner_(std::move(inner)), spec_(spec), rank_(rank) {
  if (spec_.mode == FaultSpec::Mode::Corrupt && inner_->memory_kind() != MemoryKind::Host)
    throw Error(ErrorCode::Config,
                "RESHARD_FAULT mode=corrupt (test hook) needs a host-memory transport (mpi), not " + inner_->name());
}

void FaultTransport::before_op() {
  if (!armed_ || rank_ != spec_.rank) return;
  if (posted_++ < spec_.after_ops) return;
  armed_ = false;
  std::fflush(stdout);
  std::fprintf(stderr, "reshard: rank %d: RESHARD_FAULT test hook: %s after %lld ops (pid %d)\n", rank_,
               mode_name(spec_.mode), static_cast<long long>(spec_.after_ops), static_cast<int>(::getpid()));
  std::fflush(stderr);
  switch (spec_.mode) {
    case FaultSpec::Mode::Corrupt: corrupting_ = true; return;
    case FaultSpec::Mode::Kill: std::raise(SIGKILL); break;
    case FaultSpec::Mode::Hang:
      std::raise(SIGSTOP);
      for (;;) ::pause();  // continued: stay silent until killed
    case FaultSpec::Mode::Exit: std::_Exit(7);
  }
  std::_Exit(9);  // SIGKILL is not deliverable late, but never carry on
}

const void* FaultTransport::send_buffer(const void* buf, int64_t bytes) {
  if (!corrupting_) return buf;
  const int64_t have = zeros_.empty() ? 0 : static_cast<int64_t>(zeros_.back().size());
  if (have < bytes) zeros_.emplace_back(static_cast<size_t>(std::max(bytes, 2 * have)), uint8_t{0});
  return zeros_.back().data();
}

// The sends of a corrupting rank read zeros: the receivers get wrong bytes and the run goes on.
void FaultTransport::send(int stream, int group, int peer, const void* buf, int64_t bytes) {
  before_op();
  inner_->send(stream, group, peer, send_buffer(buf, bytes), bytes);
}
void FaultTransport::recv(int stream, int group, int peer, void* buf, int64_t bytes) {
  before_op();
  inner_->recv(stream, group, peer, buf, bytes);
}
void FaultTransport::broadcast(int stream, int group, int root, void* buf, int64_t bytes) {
  before_op();
  inner_->broadcast(stream, group, root, buf, bytes);
}
void FaultTransport::send_boxes(int stream, int group, int peer, const Dims& wire_extent, int elem_size,
                                const std::vector<BoxPiece>& pieces) {
  before_op();
  inner_->send_boxes(stream, group, peer, wire_extent, elem_size, pieces);
}
void FaultTransport::recv_boxes(int stream, int group, int peer, const Dims& wire_extent, int elem_size,
                                const std::vector<BoxPiece>& pieces) {
  before_op();
  inner_->recv_boxes(stream, group, peer, wire_extent, elem_size, pieces);
}
void FaultTransport::broadcast_boxes(int stream, int group, int root, const Dims& wire_extent, int elem_size,
                                     const std::vector<BoxPiece>& pieces) {
  before_op();
  inner_->broadcast_boxes(stream, group, root, wire_extent, elem_size, pieces);
}

}  // namespace reshard
