// The busy hand-off (scripts/latency_probe.cpp, scripts/calibrate.sh --measure-host): the one-way time
// of an 8-byte ping-pong between ranks 0 and size / 2 while every other rank copies 4 MiB chunks until
// the pair is done (a non-blocking barrier it tests between chunks). Where ranks outnumber cores, a
// hand-off waits for the copiers sharing its cores to give them up, not for idle ranks that yield at
// once; reshard's stages are like that (the ranks not in a hand-off pack, unpack or copy). `copiers`
// limits the copying ranks to the first that many of the others (the rest wait in the barrier, as the
// ranks outside a stage do); negative: all of them. Median over `reps` (mpi_median_time.h); seconds,
// the same on every rank.
#pragma once
#include <mpi.h>

#include <cstring>
#include <vector>

#include "mpi_median_time.h"

// `trips` round trips of 8 bytes with `peer`; the rank that `leads` sends first.
inline void mpi_pingpong(int peer, bool leads, int trips) {
  char buf[8] = {};
  for (int i = 0; i < trips; ++i) {
    if (leads) {
      MPI_Send(buf, 8, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
      MPI_Recv(buf, 8, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf, 8, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, 8, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
    }
  }
}

inline double busy_handoff_seconds(int trips = 200, int reps = 5, int copiers = -1) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int half = size / 2;
  const size_t chunk = size_t(4) << 20;
  std::vector<char> ca(chunk, 1), cb(chunk, 2);
  const double t = median_time([&] {
    MPI_Request done_req;
    if ((rank == 0 || rank == half) && half > 0) {
      mpi_pingpong(rank == 0 ? half : 0, rank == 0, trips);
      MPI_Ibarrier(MPI_COMM_WORLD, &done_req);
      MPI_Wait(&done_req, MPI_STATUS_IGNORE);
    } else {
      // The others in rank order, the pair left out: 1 .. half-1, half+1 .. size-1.
      const int other = rank < half ? rank - 1 : rank - 2;
      MPI_Ibarrier(MPI_COMM_WORLD, &done_req);
      if (copiers >= 0 && other >= copiers) {
        MPI_Wait(&done_req, MPI_STATUS_IGNORE);
        return;
      }
      for (int done = 0; !done; MPI_Test(&done_req, &done, MPI_STATUS_IGNORE)) std::memcpy(cb.data(), ca.data(), chunk);
    }
  }, reps);
  return t / (2.0 * trips);
}
