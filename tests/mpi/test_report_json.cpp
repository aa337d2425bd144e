// The run record's fields that scripts read (label unit, no MPI): the transport's mode is its own
// field, present only where the transport has one.
#include <gtest/gtest.h>

#include "reshard/core/model.h"
#include "reshard/core/planner.h"
#include "report.h"

namespace reshard {
namespace {

RunReport one_phase_report(const Plan& plan) {
  RunReport r;
  r.plan = &plan;
  PhaseRow total;
  total.name = "total";
  total.bytes = 1 << 20;
  total.time_avg = total.time_min = total.time_max = 1e-3;
  r.rows.push_back(total);
  r.peak_bytes = {0, 0};
  return r;
}

Plan tiny_plan() {
  SystemConfig sys;
  sys.train.num_gpus = 1;
  sys.gen.num_gpus = 1;
  return plan_reshard(load_model(std::string(RESHARD_TEST_DATA) + "/tiny-dense.json"), sys, PlanOptions{});
}

TEST(ReportJson, TransportModeIsItsOwnField) {
  const Plan plan = tiny_plan();
  RunReport r = one_phase_report(plan);
  r.transport_mode = "push";
  const nlohmann::json j = report_json(r, RunArgs{}, "cuda-ipc", "CUDA runtime 13.0, driver 13.0", "Open MPI", 2);
  ASSERT_TRUE(j.contains("transport_mode"));
  EXPECT_EQ(j["transport_mode"], "push");
  EXPECT_EQ(j["versions"]["transport"], "CUDA runtime 13.0, driver 13.0");
}

TEST(ReportJson, NoModeNoField) {
  const Plan plan = tiny_plan();
  const nlohmann::json j = report_json(one_phase_report(plan), RunArgs{}, "mpi", "Open MPI", "Open MPI", 2);
  EXPECT_FALSE(j.contains("transport_mode"));
  EXPECT_EQ(j["arguments"]["transport"], "mpi");
}

TEST(ReportJson, PackStreamIsRecordedAndDeviceRunsEchoIt) {
  // scripts/calibrate.sh simulates a record's packs where its executor queued them; records without
  // the field are from before side streams (op-stream packs).
  const Plan plan = tiny_plan();
  RunArgs a;
  EXPECT_EQ(report_json(one_phase_report(plan), a, "nccl", "NCCL 2.28.3", "Open MPI", 2)["arguments"]["side_stream_packs"],
            true);
  RunReport device = one_phase_report(plan);
  device.device = "NVIDIA H200";
  EXPECT_NE(format_header(device, a, "nccl").find("#  packs: on a side stream per stream (--side-stream-packs)\n"),
            std::string::npos);
  EXPECT_EQ(format_header(one_phase_report(plan), a, "mpi").find("packs:"), std::string::npos);  // host: in line
  a.exec.side_stream_packs = false;
  EXPECT_EQ(report_json(one_phase_report(plan), a, "nccl", "NCCL 2.28.3", "Open MPI", 2)["arguments"]["side_stream_packs"],
            false);
  EXPECT_NE(format_header(device, a, "nccl").find("#  packs: on the op's stream (--op-stream-packs)\n"), std::string::npos);
}

}  // namespace
}  // namespace reshard
