// Planner speed and plan size on the seed's largest config: DeepSeek-V3 (bf16, MTP layer 61
// excluded, first/last stage 3/2 layers) PP16xEP16 -> TP32xDP8, 256 + 256 ranks.
// Goal (issue 2): <= 1 s and <= 1 GiB peak on one core; plan <= 64 MiB as CBOR.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <filesystem>

#include "reshard/core/plan_io.h"
#include "reshard/core/planner.h"

namespace {

const char* kModel = RESHARD_TEST_MODELS_DIR "/deepseek-v3-bf16.json";

reshard::SystemConfig deepseek_system() {
  reshard::SystemConfig s;
  s.train.num_gpus = 256;
  s.train.pp = 16;
  s.train.ep = 16;
  s.gen.num_gpus = 256;
  s.gen.tp = 32;
  return s;
}

reshard::PlanOptions deepseek_options() {
  reshard::PlanOptions o;
  o.exclude = {"^model\\.layers\\.61\\."};
  o.first_stage_layers = 3;
  o.last_stage_layers = 2;
  return o;
}

// A fixed reference computation, timed in the same run so perf gates can use ratios.
void BM_Reference_Sort1M(benchmark::State& state) {
  std::vector<uint64_t> v(1 << 20);
  for (auto _ : state) {
    uint64_t x = 88172645463325252ull;
    for (auto& e : v) e = (x ^= x << 13, x ^= x >> 7, x ^= x << 17);
    std::sort(v.begin(), v.end());
    benchmark::DoNotOptimize(v.data());
  }
}
BENCHMARK(BM_Reference_Sort1M)->Unit(benchmark::kMillisecond);

void BM_Load_DeepSeekV3(benchmark::State& state) {
  if (!std::filesystem::exists(kModel)) return state.SkipWithError("model metadata absent");
  for (auto _ : state) benchmark::DoNotOptimize(reshard::load_model(kModel));
}
BENCHMARK(BM_Load_DeepSeekV3)->Unit(benchmark::kMillisecond);

void BM_Plan_DeepSeekV3(benchmark::State& state) {
  if (!std::filesystem::exists(kModel)) return state.SkipWithError("model metadata absent");
  const reshard::ModelMeta model = reshard::load_model(kModel);
  size_t transfers = 0, cbor = 0;
  for (auto _ : state) {
    reshard::Plan plan = reshard::plan_reshard(model, deepseek_system(), deepseek_options());
    transfers = plan.transfers.size() + plan.fanouts.size();
    if (state.range(0)) cbor = reshard::encode_plan(plan, reshard::PlanFormat::Cbor).size();
    benchmark::DoNotOptimize(plan);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["ops"] = static_cast<double>(transfers);
  if (state.range(0)) state.counters["cbor_MiB"] = static_cast<double>(cbor) / (1 << 20);
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024;
}
BENCHMARK(BM_Plan_DeepSeekV3)->Arg(0)->Arg(1)->ArgName("encode_cbor")->Unit(benchmark::kMillisecond);

// Planning time against ranks (issue 17 G: linear in ranks): Qwen3-4B (shipped in plans/) from DP N
// to TP2 x DP N/2 over N + N ranks, planned and encoded; BigO fitted over N.
void BM_Plan_Qwen3_4B_DpN(benchmark::State& state) {
  const reshard::ModelMeta model = reshard::load_model(RESHARD_SOURCE_DIR "/plans/qwen3-4b.json");
  reshard::SystemConfig s;
  s.train.num_gpus = static_cast<int>(state.range(0));
  s.gen.num_gpus = static_cast<int>(state.range(0));
  s.gen.tp = 2;
  for (auto _ : state) {
    reshard::Plan plan = reshard::plan_reshard(model, s, reshard::PlanOptions{});
    benchmark::DoNotOptimize(plan);
  }
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_Plan_Qwen3_4B_DpN)->RangeMultiplier(2)->Range(1024, 16384)->Unit(benchmark::kMillisecond)->Complexity();

}  // namespace

BENCHMARK_MAIN();
