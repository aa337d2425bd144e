#include "ceiling.h"

#include <algorithm>
#include <map>

#include "reshard/core/hash.h"
#include "reshard/core/stats.h"

namespace reshard {
namespace {

// Barrier, f, max over ranks of the time f took (seconds).
template <class F>
double timed(Control& ctl, F&& f) {
  ctl.barrier();
  const double t0 = ctl.now();
  f();
  return ctl.max(ctl.now() - t0);
}

// Average over `iters` after `warmup` untimed runs.
template <class F>
double average(Control& ctl, int warmup, int iters, F&& f) {
  double sum = 0;
  for (int it = 0; it < warmup + iters; ++it) {
    const double t = timed(ctl, f);
    if (it >= warmup) sum += t;
  }
  return sum / iters;
}

// Copy ceiling: `bytes` through two scratch blocks (larger than any L2, so it runs at memory speed).
void copy_bytes(Memory& mem, int64_t bytes, void* a, void* b, int64_t block) {
  for (int64_t done = 0; done < bytes; done += block) mem.copy_bytes(b, a, std::min(block, bytes - done));
  mem.sync(-1);
}

// Sendrecv ceiling: chunk by chunk (each a send/recv group of every pair), gen rank g receives
// need[g] bytes from ceiling_peer(g). Every rank derives the same chunks from `need`.
void send_recv(Transport& t, const Plan& plan, int rank, const std::vector<int64_t>& need, void* buf,
               int64_t block) {
  const int64_t most = *std::max_element(need.begin(), need.end());
  for (int64_t at = 0; at < most; at += block) {
    bool posted = false;
    for (int g = plan.train_world(); g < plan.world(); ++g) {
      const int64_t n = std::min(block, need[g] - at);
      if (n <= 0) continue;
      const int peer = ceiling_peer(plan, g);
      if (rank == g) t.recv(0, 0, peer, buf, n);
      if (rank == peer) t.send(0, 0, g, buf, n);
      posted = posted || rank == g || rank == peer;
    }
    if (posted) {
      t.flush(0);
      t.wait(0, 0);
    }
  }
}

// See ceiling.h: one process's copy rate, and per row the busiest memory pool's bytes at that rate.
void add_device_copy(Control& ctl, const Plan& plan, Memory& memory, const std::vector<std::vector<int64_t>>& need,
                     std::vector<PhaseRow>& rows, int warmup, int iters) {
  const std::string name = memory.pool();
  const uint64_t h = Hasher().add(name).value();  // equal on ranks sharing the pool
  std::vector<uint8_t> mine(8);
  for (int i = 0; i < 8; ++i) mine[i] = static_cast<uint8_t>(h >> (8 * i));
  const std::vector<uint8_t> all = ctl.allgather(mine, 8);
  std::vector<uint64_t> pool(plan.world(), 0);
  for (int r = 0; r < plan.world(); ++r)
    for (int i = 0; i < 8; ++i) pool[r] |= static_cast<uint64_t>(all[8 * r + i]) << (8 * i);
  const int64_t total = *std::max_element(need.back().begin(), need.back().end());
  const int64_t block = std::clamp<int64_t>(total, 1, int64_t{256} << 20);
  void* a = ctl.rank() == 0 ? memory.alloc(block) : nullptr;
  void* b = ctl.rank() == 0 ? memory.alloc(block) : nullptr;
  if (a != nullptr) {
    memory.memset(a, 0, block);
    memory.sync(-1);
  }
  double best = 1e30;
  for (int it = 0; it < std::max(warmup, 1) + iters; ++it) {
    const double t = timed(ctl, [&] {
      if (a != nullptr) copy_bytes(memory, block, a, b, block);
    });
    if (it >= warmup) best = std::min(best, t);
  }
  for (void* p : {a, b})
    if (p != nullptr) memory.free(p);
  const double rate = static_cast<double>(block) / best;  // bytes/s, one process alone
  for (size_t ph = 0; ph < need.size() && ph < rows.size(); ++ph) {
    std::map<uint64_t, int64_t> per_pool;
    for (int r = 0; r < plan.world(); ++r) per_pool[pool[r]] += need[ph][r];
    int64_t busiest = 0;
    for (const auto& [p, bytes] : per_pool) busiest = std::max(busiest, bytes);
    if (busiest == 0) continue;
    rows[ph].device_copy_bytes = busiest;
    rows[ph].device_copy_time = static_cast<double>(busiest) / rate;
  }
}

}  // namespace

const char* to_string(CeilingKind k) { return k == CeilingKind::Copy ? "copy" : "sendrecv"; }

CeilingKind ceiling_kind_for(const Transport& transport, const Memory& memory) {
  return memory.kind() == MemoryKind::Device && !transport.one_rank_per_device() ? CeilingKind::Copy
                                                                                 : CeilingKind::SendRecv;
}

int ceiling_peer(const Plan& plan, int gen_rank) {
  const int t = plan.train_world();
  return ((gen_rank - t) % t + t) % t;
}

void add_ceiling(Control& ctl, const Plan& plan, Memory& memory, Transport& transport, CeilingKind kind,
                 std::vector<PhaseRow>& rows, int warmup, int iters) {
  const auto lb = compute_phase_lower_bounds(plan).received;
  const int phases = static_cast<int>(lb.size()), world = plan.world();
  // need[phase][rank] for every rank (the plan alone decides), last row: the total.
  std::vector<std::vector<int64_t>> need(phases + 1, std::vector<int64_t>(world, 0));
  for (int ph = 0; ph < phases; ++ph)
    for (int r = 0; r < world; ++r) {
      need[ph][r] = lb[ph][r];
      need[phases][r] += lb[ph][r];
    }
  const int me = ctl.rank();
  int64_t mine = 0;  // the most this rank moves in any row: its own receive, or a peer's it sends
  for (int r = 0; r < world; ++r)
    if (r == me || (kind == CeilingKind::SendRecv && plan.is_gen(r) && ceiling_peer(plan, r) == me))
      mine = std::max(mine, need[phases][r]);
  int64_t block = std::min<int64_t>(mine, int64_t{1} << 30);
  if (kind == CeilingKind::SendRecv) block = std::min(block, transport.max_message_bytes());
  // Sendrecv: every rank chunks alike, so the block is the same everywhere.
  if (kind == CeilingKind::SendRecv) block = ctl.max(block);
  void* a = mine > 0 ? memory.alloc(block) : nullptr;
  void* b = mine > 0 && kind == CeilingKind::Copy ? memory.alloc(block) : nullptr;
  for (void* p : {a, b})
    if (p != nullptr) memory.memset(p, 0, block);  // contents do not matter, but leave them defined
  memory.sync(-1);
  for (int ph = 0; ph <= phases && ph < static_cast<int>(rows.size()); ++ph) {
    const int64_t busiest = *std::max_element(need[ph].begin(), need[ph].end());
    if (busiest == 0) continue;
    rows[ph].ceiling_bytes = busiest;
    rows[ph].ceiling_time = average(ctl, warmup, iters, [&] {
      if (kind == CeilingKind::Copy) copy_bytes(memory, need[ph][me], a, b, std::max<int64_t>(block, 1));
      else send_recv(transport, plan, me, need[ph], a, std::max<int64_t>(block, 1));
    });
  }
  for (void* p : {a, b})
    if (p != nullptr) memory.free(p);
  if (kind == CeilingKind::Copy) add_device_copy(ctl, plan, memory, need, rows, warmup, iters);
}

}  // namespace reshard
