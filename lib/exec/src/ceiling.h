// The ceiling a GPU run is measured against, in the same run (docs/gpu.md, "Ceiling and efficiency").
// Both move, per phase, exactly the bytes each rank must receive at least (PhaseLowerBounds::received,
// core/stats.h), all ranks at once, timed like the phases (barrier, move, sync, max over ranks,
// warm-up dropped):
//   copy      every rank copies its bytes within its own device memory. For ranks that share GPUs
//             (cuda-ipc): the device memory is the link.
//   sendrecv  every gen rank receives its bytes from one train rank through the transport itself
//             (NCCL: plain send/recv between two GPUs, no reshard logic): the link between GPUs.
// With copy, also the device's own limit: one process alone copies a block (rank 0, 256 MiB at most,
// best of the timed runs), and a phase's device-copy time is the bytes of all ranks sharing the
// busiest memory pool (Memory::pool) at that rate. Time-sliced processes cannot beat it; the
// concurrent copy ceiling above pays their switches too.
#pragma once
#include <string>
#include <vector>

#include "reshard/core/plan.h"
#include "reshard/exec/control.h"
#include "memory.h"
#include "report.h"
#include "transport.h"

namespace reshard {

enum class CeilingKind { Copy, SendRecv };
const char* to_string(CeilingKind k);

// copy where ranks may share a GPU (cuda-ipc); sendrecv where every rank has its own (NCCL:
// Transport::one_rank_per_device) and on host memory (mpi: plain MPI send/recv between processes).
CeilingKind ceiling_kind_for(const Transport& transport, const Memory& memory);

// The train rank a gen rank receives from in the sendrecv ceiling: (g - T) mod T, so gen ranks spread
// over the train ranks as evenly as the counts allow.
int ceiling_peer(const Plan& plan, int gen_rank);

// Fills rows[].ceiling_* (phases..., total); collective over all ranks. The transport must have been
// set up with the plan's groups (the sendrecv ceiling uses group 0, which holds every rank).
void add_ceiling(Control& ctl, const Plan& plan, Memory& memory, Transport& transport, CeilingKind kind,
                 std::vector<PhaseRow>& rows, int warmup, int iters);

}  // namespace reshard
