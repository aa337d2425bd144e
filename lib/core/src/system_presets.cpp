// Preset system models. Sources and which values are assumptions: docs/performance.md, "Presets".
#include "reshard/core/system_presets.h"

#include "reshard/core/error.h"

namespace reshard {

namespace {

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

}  // namespace

const std::vector<SystemModel>& system_presets() {
  static const std::vector<SystemModel> presets = {
      // DGX/HGX H100: NVLink4 450 GB/s per direction peak, ~370 achieved; one 400 Gb/s CX-7 per GPU.
      make("h100-nvl8-ib400", 8, 370, 47, 3, 10, 5, 0.5),
      // H200 SXM: same NVLink4 fabric and NICs as H100.
      make("h200-nvl8-ib400", 8, 370, 47, 3, 10, 5, 0.5),
      // GB200 NVL72: one NVLink5 domain of 72 GPUs, 900 GB/s per direction peak; CX-7 400 Gb/s per GPU.
      make("gb200-nvl72", 72, 800, 47, 3, 10, 5, 0.5),
      // CPU MPI on one host (shared-memory transport): everything is one domain. Bandwidth fitted on
      // the one CPU run in results/ (2 + 2 ranks on a 2-core host, bulk busbw 2.36 GB/s); the rest
      // are assumptions. Refit with scripts/calibrate.sh as more runs land.
      make("cpu-mpi-local", int64_t{1} << 30, 2.4, 2.4, 2, 2, 1, 1),
  };
  return presets;
}

SystemModel find_system_preset(const std::string& name) {
  std::string known;
  for (const SystemModel& m : system_presets()) {
    if (m.name == name) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  throw config_error("--system: unknown system preset '" + name + "' (known: " + known + ")");
}

}  // namespace reshard
