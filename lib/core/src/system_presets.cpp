// Preset system models. Sources and which values are assumptions: docs/performance.md, "Presets".
#include "reshard/core/system_presets.h"

#include "reshard/core/error.h"

namespace reshard {

namespace {

// NCCL's staged ops: a sender packs each strided box into staging with a kernel (on a side stream, or
// with --op-stream-packs on the op's stream) before the batch's NCCL group is flushed onto the op's
// stream, and a receiver unpacks staging after it waited for the batch, then syncs the device
// (lib/exec/src/executor.cpp: run_ops, retire_oldest). So a batch waits for its packs and unpacks
// instead of overlapping them with its wire: serial_packs and kernel_packs at the GPU's device copy
// rate. Two H200s (results/gpu/x2/nccl*, Qwen3-4B 1 -> 1, deb954c): misc, packed into buckets and
// unpacked, read 9.75-10.31 ms where NVLink alone gives 7.2-7.3 (-29 %); with both copies at 1911 GB/s,
// 8.5-9.2 (-10...-17 %); with each copy's launch too (below), 9.69-10.31 (-6...+1.5 %); bulk, whole
// tensors without staging, unchanged (-1...-8 %).
// Each pack and unpack is one copy kernel the rank's thread launches (Memory::copy_box), so each also
// costs the host the per-launch time fitted for that same launch on the card's one-GPU preset; the
// receive itself is NCCL's (nccl_transport.cpp: ncclRecv into the staging or storage pointer), no copy.
SystemModel with_staged_copies(SystemModel m, double copy_gbps, double per_launch_us) {
  m.copy_gbps = copy_gbps;
  m.per_launch_us = per_launch_us;
  m.wire_copies = 0;  // NCCL's kernels move a receive into its buffer: no copy after it, no launch of ours
  m.serial_packs = true;
  m.kernel_packs = true;
  return m;
}

// Device copy rates (GB/s of bytes copied): measured on one H200 (1911) and one H100 (1356.2), the
// one-GPU presets below. They scale with HBM bandwidth (H100 SXM 3.35 TB/s, H200 4.8 TB/s: 1911 x
// 3.35 / 4.8 = 1334, 1.6 % under the H100's measurement), so a B200 in GB200 NVL72 (8 TB/s HBM3e) is
// taken as 1911 x 8 / 4.8 = 3185: an assumption, not measured.
constexpr double kH100CopyGbps = 1356.2;
constexpr double kH200CopyGbps = 1911;
constexpr double kB200CopyGbps = kH200CopyGbps * 8.0 / 4.8;

// Host cost of one copy kernel launch (Memory::copy_box), fitted on each card's host from golden's
// 8192 unpack launches of stress config 3 (h200_shared_1gpu, h100_shared_1gpu below). A GB200's Grace
// host is not measured: the H100 host's value is an assumption there. The fits hold for a rank alone
// on its GPU (the NCCL presets): time-slicing does not raise a launch's host cost; hosts differ, 3.2-4.8
// us on one H100 machine, 4.0-5.9 on another (bench/copy_box_launch.cpp, results/gpu/copy_box_launch_h100/).
constexpr double kH100LaunchUs = 3.28;
constexpr double kH200LaunchUs = 3.86;

SystemModel make(const char* name, int64_t gpus_per_node, double nvlink, double nic, double nvlink_lat,
                 double nic_lat, double launch, double per_op) {
  SystemModel m;
  m.name = name;
  m.gpus_per_node = gpus_per_node;
  m.nvlink_gbps = nvlink;
  m.nic_gbps = nic;
  m.nvlink_latency_us = nvlink_lat;
  m.nic_latency_us = nic_lat;
  m.launch_us = launch;
  m.per_op_us = per_op;
  return m;
}

// CPU MPI on one host (Open MPI shared memory, host staging): one domain whose ranks share the host's
// memory system. Measured by `scripts/calibrate.sh --measure-host` on the 2-core VM, 4 ranks (medians
// of three runs): one pair's MPI point-to-point 5.95 GB/s (the link), memcpy 12.1 GB/s one rank /
// 12.0 GB/s all ranks at once, point-to-point 6.88 GB/s all pairs at once = 12.0 / 6.88 = 1.74 copies
// per received byte. Open MPI's MPI_Ibcast (libnbc) is linear up to 4 members (its source). Latency,
// launch and per-op costs are assumptions (they do not matter at tens of ops).
SystemModel cpu_mpi_local() {
  SystemModel m = make("cpu-mpi-local", int64_t{1} << 30, 5.95, 5.95, 2, 2, 1, 1);
  m.copy_gbps = 12.1;
  m.shared_copy_gbps = 12.0;
  m.wire_copies = 1.74;
  m.linear_broadcast_max = 4;
  m.binomial_broadcast_min = 5;  // Open MPI 4.1 libnbc: binomial above 4 members (nbc_ibcast.c)
  // fan_gbps stays 0 (broadcasts as before): not measured on the VM, whose CMA single copy makes the
  // receivers copy; scripts/calibrate.sh passes each host's measured rate (--measure-host: fan_gbps).
  // The executor packs a strided box into staging right before posting its send and unpacks after the
  // wait, on the rank's thread (executor.cpp: run_ops, retire_oldest; host memory copies synchronously).
  m.serial_packs = true;
  return m;
}

// All ranks on ONE H200 through cuda-ipc (results/gpu/gpu_runs.json, batched copy kernel, no MPS): the
// link is the device memory, every copy of every rank contends for it. Shared copy rate: the mean over
// the six records of configs 1a, 1b, 2 of (total ceiling_gbps x gen ranks) = 1911 GB/s (each rank alone
// assumed as fast). Box ops, one pull per received byte, every member pulls from the root (linear).
// The processes time-slice the GPU (no MPS), so every rank's issue costs occupy it (serial_issue).
// Host costs model the current cuda-ipc host path (deb954c: one event query per launch and pass, fan-out
// merge by sort); records of older builds measure a slower host path (docs/performance.md).
// Per-batch handshake 48.3 us: measured, not fitted, on the current executor's window-1 cuda-ipc traces
// (lib/exec unchanged since aef24f7), results/gpu/trace_h100/trace/{dp2_tp2_w1,pp2dp2_tp2dp2_direct_w1}.*
// (push, no MPS): `python3 scripts/ipc_trace.py --handshake` over them, the median over the 1062 waits
// that launched copies of (first launch - begin) + (end - copies done). At window 1 a wait begins as its
// batch is posted, so it holds the batch's own host work and no wait for earlier batches, which the
// walk models, and in plans without forwarding no wait for incoming data either (a two-phase plan's
// forwarders wait for theirs inside it: 170-305 us, so those traces do not measure the handshake); the
// H200's 1a at window 1 (results/gpu/extra/trace_19254c7/1a_w1) reads 40.4. It is host work, so the
// H100's value serves the H200. (Until 2026-12-06: 141 us, the step's start to the first launch of its
// busiest copier plus its copies done to the step's end in 9230185's bulk steps of 1b at the bench's
// window, which held the copiers' waits for their slowest peer besides.)
// Fitted on deb954c's push stress config 3 bulk.pp0 (results/gpu/push/gpu_runs.json, one batch; reshard
// 7.492 ms: 16384 ops, 2 batched launches, 2 switches; golden 39.124 ms: 16384 ops, 1 batched launch +
// 8192 unpacks, a launch each, 1 switch), less the handshake, the copy time (128 / 384 MiB at 1911 GB/s)
// and the measured switches (x 137.7 us): per op 0.433 us, per launch 3.86 us (0.427 / 3.86 with the
// earlier 141 us handshake; e6b0d46's pull records gave 0.724 / 3.94 with the older build's 0.5 ms
// handshake). Per copy 0: on config 3 every receive is
// one copy, so a batched copy's host work cannot be told from the op's and is in per_op_us; in the kernel
// a copy costs its bytes. docs/performance.md has the arithmetic. Context switch (switch_us) and time
// slice (slice_us): measured on their own, not fitted, by scripts/gpu_timeslice.sh (MPS off;
// results/gpu/timeslice/, one run): switch_us from P processes' synchronous small copies,
// `derived.off.switch_us_for_preset` = 137.72 us (median over 4, 6, 8 processes; the first run, in git at
// 6b05936, read 136.2); slice_us from P spinning kernels' running intervals, `derived.off.timeslice_us` =
// 2090.7 us (median over 2, 4, 8 processes).
SystemModel h200_shared_1gpu() {
  SystemModel m = make("h200-shared-1gpu", int64_t{1} << 30, kH200CopyGbps, kH200CopyGbps, 48.3, 48.3, 0, 0.433);
  m.copy_gbps = kH200CopyGbps;
  m.shared_copy_gbps = kH200CopyGbps;
  m.wire_copies = 1;
  m.per_copy_us = 0;
  m.per_launch_us = kH200LaunchUs;
  m.serial_issue = true;
  m.switch_us = 137.7;  // results/gpu/timeslice/gpu_timeslice.json: derived.off.switch_us_for_preset
  m.slice_us = 2090.7;  // results/gpu/timeslice/gpu_timeslice.json: derived.off.timeslice_us
  m.box_ops = true;
  m.linear_broadcast_max = int64_t{1} << 30;
  return m;
}

// All ranks on ONE H100 (80GB HBM3) through cuda-ipc, no MPS: h200-shared-1gpu's model with the H100's
// own measured device constants. Shared copy rate: the mean over the 20 records of results/gpu/trace_h100
// (2026-12-05; 4- and 8-rank Qwen3-4B plans and config 2 at 18 layers, push and pull, window 1 and 16)
// of (total ceiling_gbps x gen ranks) = 1356.2 GB/s, derived as the H200's 1911. switch_us and slice_us:
// scripts/gpu_timeslice.sh on the H100 (results/gpu/timeslice_h100/gpu_timeslice.json, MPS off):
// `derived.off.switch_us_for_preset` 135.99 us, `derived.off.timeslice_us` 2090.4 us. The handshake is
// the one above (measured on this H100's traces). Per-op and per-launch costs: solved as the H200's, on
// H100 machines' hosts, from the current build's push stress config 3 bulk.pp0 in two launches on two
// machines (results/gpu/recheck_h100/bench{,2}/gpu_runs.json; reshard 5.482 and 9.192 ms: 16384 ops, 2
// batched launches, 2 switches; golden 32.508 and 36.065 ms: 16384 ops, 8193 launches, 1 switch), their
// means less the handshake, the copy time (128 / 384 MiB at 1356.2 GB/s) and the switches (x 136.0 us):
// per op 0.422 us, per launch 3.28 us. The two hosts differ by 1.68x on the reshard row, so no one
// cost predicts both within 25 %. (Until 2026-12-06 the H200's 0.433 / 3.86, assumed.)
SystemModel h100_shared_1gpu() {
  SystemModel m = h200_shared_1gpu();
  m.name = "h100-shared-1gpu";
  m.nvlink_gbps = m.nic_gbps = m.copy_gbps = m.shared_copy_gbps = kH100CopyGbps;
  m.per_op_us = 0.422;    // results/gpu/recheck_h100/bench{,2}/gpu_runs.json, config 3 (above)
  m.per_launch_us = kH100LaunchUs;
  m.switch_us = 136.0;  // results/gpu/timeslice_h100/gpu_timeslice.json: derived.off.switch_us_for_preset
  m.slice_us = 2090.4;  // results/gpu/timeslice_h100/gpu_timeslice.json: derived.off.timeslice_us
  return m;
}

// The same GPU and build under the CUDA MPS daemon (results/gpu/mps/gpu_runs.json): the ranks' kernels
// run concurrently, and the ceiling's copies too, so only the copy rate changes. Copy rate:
// the mean of (total ceiling_gbps x gen ranks) over the six MPS records = 2123 GB/s. Handshake, per-op
// and per-launch costs are h200-shared-1gpu's (an assumption: nothing here is fitted on an MPS record;
// deb954c's push config 3 under MPS, fitted alike, would give 0.440 / 4.06 us).
SystemModel h200_shared_1gpu_mps() {
  SystemModel m = h200_shared_1gpu();
  m.name = "h200-shared-1gpu-mps";
  m.nvlink_gbps = m.nic_gbps = m.copy_gbps = m.shared_copy_gbps = 2123;
  // Issue costs still add up on the device: config 3 under MPS (results/gpu/extra/mps_stress, run
  // after this preset was first made) costs 3.4 us per message vs 3.1 without MPS.
  m.serial_issue = true;
  m.switch_us = 0;  // one MPS server context: no switch between the ranks' contexts
  m.slice_us = 0;   // nor time slices between them
  return m;
}

}  // namespace

const std::vector<SystemModel>& system_presets() {
  static const std::vector<SystemModel> presets = {
      // DGX/HGX H100: NVLink4 450 GB/s per direction peak, ~370 achieved; one 400 Gb/s CX-7 per GPU.
      with_staged_copies(make("h100-nvl8-ib400", 8, 370, 47, 3, 10, 5, 0.5), kH100CopyGbps, kH100LaunchUs),
      // H200 SXM: same NVLink4 fabric and NICs as H100.
      with_staged_copies(make("h200-nvl8-ib400", 8, 370, 47, 3, 10, 5, 0.5), kH200CopyGbps, kH200LaunchUs),
      // GB200 NVL72: an NVLink5 domain of 72 GPUs (18 trays of 4), 900 GB/s per direction peak; CX-7
      // 400 Gb/s per GPU. A job's ranks fill 16 of a rack's 18 trays, 64 GPUs, so that power-of-two
      // groups never straddle racks (72-GPU domains would leave 512 ranks' last 8 alone in an eighth
      // rack); NCCL M2N's published GB200 runs use 64 per domain too.
      with_staged_copies(make("gb200-nvl72", 64, 800, 47, 3, 10, 5, 0.5), kB200CopyGbps, kH100LaunchUs),
      cpu_mpi_local(),
      h200_shared_1gpu(),
      h200_shared_1gpu_mps(),
      h100_shared_1gpu(),
  };
  return presets;
}

SystemModel find_system_preset(const std::string& name) {
  std::string known;
  for (const SystemModel& m : system_presets()) {
    if (m.name == name) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  throw config_error("--preset: unknown system preset '" + name + "' (known: " + known + ")");
}

}  // namespace reshard
