// The MPI transport on its own: batches of sends/receives over streams, broadcasts on split
// groups, and a size mismatch turned into an Error instead of silent truncation.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>

#include "reshard/exec/control.h"
#include "transport.h"

namespace reshard {
namespace {

Control& control() {
  static Control c;
  return c;
}

std::vector<CommGroup> world_and_evens(int world) {
  CommGroup all{"misc", -1, {}}, evens{"fanout", -1, {}};
  for (int r = 0; r < world; ++r) {
    all.ranks.push_back(r);
    if (r % 2 == 0) evens.ranks.push_back(r);
  }
  return {all, evens};
}

uint8_t byte_of(int from, int to, int msg, int64_t i) { return static_cast<uint8_t>(from * 31 + to * 7 + msg * 13 + i); }

TEST(MpiTransport, RingBatchesOverStreams) {
  Control& ctl = control();
  auto t = make_transport("mpi", ctl);
  const int world = ctl.size(), me = ctl.rank();
  t->setup(world_and_evens(world), 2);
  const int next = (me + 1) % world, prev = (me + world - 1) % world;
  // Messages of growing size, alternating streams; several per batch.
  const std::vector<int64_t> sizes = {1, 7, 4096, 100000, 3, 1 << 20};
  std::vector<std::vector<uint8_t>> out(sizes.size()), in(sizes.size());
  for (size_t m = 0; m < sizes.size(); ++m) {
    out[m].resize(sizes[m]);
    in[m].assign(sizes[m], 0);
    for (int64_t i = 0; i < sizes[m]; ++i) out[m][i] = byte_of(me, next, static_cast<int>(m), i);
  }
  for (size_t m = 0; m < sizes.size(); ++m) {
    const int s = static_cast<int>(m % 2);
    t->send(s, 0, next, out[m].data(), sizes[m]);
    t->recv(s, 0, prev, in[m].data(), sizes[m]);
    if (m % 3 == 2) {
      for (int q = 0; q < 2; ++q) t->flush(q);
      for (int q = 0; q < 2; ++q) t->wait(q, 0);
    }
  }
  int64_t wrong = 0;
  for (size_t m = 0; m < sizes.size(); ++m)
    for (int64_t i = 0; i < sizes[m]; ++i) wrong += in[m][i] != byte_of(prev, me, static_cast<int>(m), i);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(ctl.sum(wrong), 0);
}

TEST(MpiTransport, BroadcastOnSubgroup) {
  Control& ctl = control();
  auto t = make_transport("mpi", ctl);
  const int me = ctl.rank();
  t->setup(world_and_evens(ctl.size()), 1);
  std::vector<int> buf(1000, me);
  if (me % 2 == 0) {
    const int root = ctl.size() > 2 ? 2 : 0;
    t->broadcast(0, 1, root, buf.data(), static_cast<int64_t>(buf.size() * sizeof(int)));
    t->flush(0);
    t->wait(0, 0);
    EXPECT_EQ(std::count(buf.begin(), buf.end(), root), static_cast<long>(buf.size()));
  } else {
    EXPECT_THROW(t->broadcast(0, 1, 0, buf.data(), 4), Error);  // not a member of that group
    EXPECT_EQ(std::count(buf.begin(), buf.end(), me), static_cast<long>(buf.size()));
  }
}

TEST(MpiTransport, ShortMessageIsAnError) {
  Control& ctl = control();
  auto t = make_transport("mpi", ctl);
  const int world = ctl.size(), me = ctl.rank();
  t->setup(world_and_evens(world), 1);
  std::vector<uint8_t> small(8, 1), big(16, 0);
  if (me == 0) {
    t->send(0, 0, 1, small.data(), 8);
    t->wait(0, 0);
  } else if (me == 1) {
    t->recv(0, 0, 0, big.data(), 16);
    try {
      t->wait(0, 0);
      ADD_FAILURE() << "a short message was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Runtime);
      EXPECT_NE(std::string(e.what()).find("expected 16"), std::string::npos) << e.what();
    }
  }
  ctl.barrier();
}

TEST(MpiTransport, TraceHasOneRowPerWaitWithItsFlushAndEnd) {
  // --mpi-trace: rank r writes PREFIX.r.tsv at teardown, a row per wait (scripts/ipc_trace.py's
  // columns): two batches of one send and one receive each on a ring, so two rows, each with its
  // request count 2, flush <= begin <= end, and the copier's points (cuda-ipc only) 0.
  Control& ctl = control();
  const int world = ctl.size(), me = ctl.rank();
  const std::string prefix = testing::TempDir() + "mpi_trace_" + std::to_string(ctl.max(static_cast<int64_t>(::getpid())));
  {
    TransportOptions o;
    o.mpi_trace = prefix;
    auto t = make_transport("mpi", ctl, o);
    t->setup(world_and_evens(world), 1);
    std::vector<uint8_t> out(64, 1), in(64, 0);
    for (int b = 0; b < 2; ++b) {
      t->send(0, 0, (me + 1) % world, out.data(), 64);
      t->recv(0, 0, (me + world - 1) % world, in.data(), 64);
      t->flush(0);
      t->wait(0, 0);
    }
  }
  std::ifstream f(prefix + "." + std::to_string(me) + ".tsv");
  ASSERT_TRUE(f.good());
  std::string header, line;
  std::getline(f, header);
  EXPECT_EQ(header.rfind("rank\twait\tstream\tops\tlaunches\tflush_begin\tflush_end\tbegin\t", 0), 0u) << header;
  int rows = 0;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    int rank = -1, wait = -1, stream = -1;
    int64_t ops = 0, launches = -1;
    double flush_begin = 0, flush_end = 0, begin = 0, take0 = 1, take1 = 1, launch0 = 1, launch1 = 1, done = 1, end = 0;
    in >> rank >> wait >> stream >> ops >> launches >> flush_begin >> flush_end >> begin >> take0 >> take1 >> launch0 >>
        launch1 >> done >> end;
    EXPECT_EQ(rank, me);
    EXPECT_EQ(wait, rows);
    EXPECT_EQ(ops, 2);
    EXPECT_EQ(launches, 0);
    EXPECT_GT(flush_begin, 0);
    EXPECT_LE(flush_begin, begin);
    EXPECT_LE(begin, end);
    EXPECT_EQ(take0 + take1 + launch0 + launch1 + done, 0);
    ++rows;
  }
  EXPECT_EQ(rows, 2);
  ctl.barrier();
  std::remove((prefix + "." + std::to_string(me) + ".tsv").c_str());
}

}  // namespace
}  // namespace reshard
