// Parsing the enum names of plan.h ("bulk", "two-phase", "vllm", ...): the inverse of to_string().
// Each throws Error(Config) naming the value seen and the accepted names.
#pragma once
#include <string>

#include "reshard/core/plan.h"

namespace reshard {

Path parse_path(const std::string& s);               // "bulk" | "misc"
Fanout parse_fanout(const std::string& s);           // "direct" | "two-phase"
BulkMode parse_bulk_mode(const std::string& s);      // "ffn" | "all"
GenLayout parse_gen_layout(const std::string& s);    // "hf" | "vllm" | "megatron"
FanoutMode parse_fanout_mode(const std::string& s);  // "auto" | "direct" | "two-phase"
GenPrecision parse_gen_precision(const std::string& s);  // "auto" | "bf16" | "fp8" | "mxfp8"
ScalesPath parse_scales_path(const std::string& s);      // "misc" | "bulk"
ExpertPlacement parse_expert_placement(const std::string& s);  // "linear" | "round_robin"
RankOrder parse_rank_order(const std::string& s);  // "tp-cp-ep-dp-pp" | "tp-cp-ep-pp-dp"

}  // namespace reshard
