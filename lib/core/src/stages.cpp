#include "reshard/core/stages.h"

#include <algorithm>
#include <string>

#include "reshard/core/parallelism.h"

namespace reshard {
namespace {

std::string n(int64_t v) { return std::to_string(v); }

constexpr size_t kMaxLayoutChars = size_t{1} << 20;  // an unrolled layout longer than this is refused
// Megatron takes any count (Python int); ours stops here so that a typo is named, not unrolled.
constexpr int64_t kMaxRepeat = 9999999;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Appends `what` n times, n being the digits after the '*' at from[star] (Megatron's \d+ takes them
// all, leading zeros included); `next` is set past them. The digits are read from `from`, the text
// this pass scans, never from another pass's text. False, with a problem, on a count too large.
bool unroll(const std::string& text, const std::string& from, size_t star, const std::string& what,
            std::string& out, size_t& next, Problems& problems) {
  size_t end = star + 1;
  int64_t count = 0;
  for (; end < from.size() && is_digit(from[end]); ++end)
    if (count <= kMaxRepeat) count = count * 10 + (from[end] - '0');
  if (count > kMaxRepeat) {
    problems.add("--pipeline-layout: the count " + from.substr(star + 1, end - star - 1) + " after '*' in '" + text +
                 "' is too large (at most " + n(kMaxRepeat) + ")");
    return false;
  }
  if (static_cast<double>(what.size()) * static_cast<double>(count) + static_cast<double>(out.size()) >
      static_cast<double>(kMaxLayoutChars)) {
    problems.add("--pipeline-layout: unrolls to more than " + n(static_cast<int64_t>(kMaxLayoutChars)) + " symbols");
    return false;
  }
  for (int64_t r = 0; r < count; ++r) out += what;
  next = end;
  return true;
}

// megatron/core/transformer/pipeline_parallel_layer_layout.py PipelineParallelLayerLayout.parse_str_to_list,
// followed exactly (it decides what Megatron accepts):
//  1. every ',' is removed first (so "t*1,2" is t*12);
//  2. re.sub(r'\(([^)]+)\)\*(\d+)'): left to right, each "(body)*n" becomes body n times, body running to
//     the first ')'; no nesting: "((t)*2)*3" leaves a stray '(' / ')'. The result is not rescanned;
//  3. re.sub(r'(.)\*(\d+)') on the text of step 2: "x*n" becomes x n times, x any one character but a
//     newline ('|' too); so "(t)*2*3" -> "tt*3" -> 4 t;
//  4. split on '|'; each character must be E, t, m or L (a leftover '(', ')', '*' or digit is refused).
// Empty on a problem.
std::vector<std::string> parse_layout(const std::string& text, Problems& problems) {
  std::string s;
  for (char c : text)
    if (c != ',') s += c;
  // Step 2: "(body)*n" matches at p when s[p] is '(' and the first ')' after it closes a non-empty body
  // followed by '*' and a digit; otherwise s[p] is kept.
  std::string groups;
  for (size_t p = 0; p < s.size();) {
    const size_t close = s[p] == '(' ? s.find(')', p + 1) : std::string::npos;
    if (close != std::string::npos && close > p + 1 && close + 2 < s.size() && s[close + 1] == '*' &&
        is_digit(s[close + 2])) {
      if (!unroll(text, s, close + 1, s.substr(p + 1, close - p - 1), groups, p, problems)) return {};
      continue;
    }
    groups += s[p++];
  }
  // Step 3, on the text of step 2.
  std::string flat;
  for (size_t p = 0; p < groups.size();) {
    if (groups[p] != '\n' && p + 2 < groups.size() && groups[p + 1] == '*' && is_digit(groups[p + 2])) {
      if (!unroll(text, groups, p + 1, std::string(1, groups[p]), flat, p, problems)) return {};
      continue;
    }
    flat += groups[p++];
  }
  std::vector<std::string> stages(1);
  for (char c : flat) {
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 'L' || c == 't' || c == 'm') {
      stages.back() += c;
    } else {
      std::string why;
      if (c == '*') why = ": '*' must follow a symbol or a (...) group and be followed by a count";
      if (c == '(' || c == ')') why = ": a group is (...)*n, not nested (Megatron's first ')' ends it)";
      problems.add(std::string("--pipeline-layout: invalid layer character '") + c + "' in '" + text + "'" + why +
                   " (known: E embedding, t decoder, m mtp, L loss; Megatron's parse_str_to_list)");
      return {};
    }
  }
  return stages;
}

// The layer count of each chunk k = v * pp + r, from a layout.
TrainStages from_layout(int layers, const MegatronPipeline& m, Problems& problems) {
  TrainStages out;
  out.output = out.final_norm = out.mtp = m.pp - 1;
  const std::vector<std::string> stages = parse_layout(m.layout, problems);
  if (stages.empty()) return out;
  const std::string rule = " (megatron/core/transformer/pipeline_parallel_layer_layout.py)";
  if (stages.size() % static_cast<size_t>(m.pp) != 0) {
    problems.add("--pipeline-layout has " + n(static_cast<int64_t>(stages.size())) +
                 " stages, not divisible by pp=" + n(m.pp) + rule);
    return out;
  }
  const int vpp = static_cast<int>(stages.size()) / m.pp;
  if (m.vpp > 1 && m.vpp != vpp)
    problems.add("--pipeline-layout gives " + n(vpp) + " virtual stages per pp rank, vpp=" + n(m.vpp) +
                 " conflicts with it" + rule);
  std::string flat;
  for (const std::string& s : stages) flat += s;
  const auto count = [&](char c) { return std::count(flat.begin(), flat.end(), c); };
  if (flat.empty() || flat.front() != 'E') problems.add("--pipeline-layout: the first layer must be embedding (E)" + rule);
  if (flat.empty() || flat.back() != 'L') problems.add("--pipeline-layout: the last layer must be loss (L)" + rule);
  if (count('E') != 1) problems.add("--pipeline-layout: embedding (E) must be given exactly once" + rule);
  if (count('L') != 1) problems.add("--pipeline-layout: loss (L) must be given exactly once" + rule);
  if (count('t') != layers)
    problems.add("--pipeline-layout has " + n(count('t')) + " decoder layers (t), the model has " + n(layers) + rule);
  if (count('m') != m.mtp_layers)
    problems.add("--pipeline-layout has " + n(count('m')) + " mtp layers (m), the model has " + n(m.mtp_layers) + rule);
  const size_t first_m = flat.find('m');
  if (first_m != std::string::npos && flat.find('t', first_m) != std::string::npos)
    problems.add("--pipeline-layout: decoder layers must be placed before MTP layers" + rule);
  int mtp_stage = -1;
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].find('m') == std::string::npos) continue;
    if (mtp_stage >= 0 && static_cast<int>(i) != mtp_stage)
      problems.add("--pipeline-layout: all MTP layers must be in one virtual pipeline stage" + rule);
    if (static_cast<int>(i) / m.pp != vpp - 1)
      problems.add("--pipeline-layout: MTP layers must be in the last virtual pipeline stage of their rank" + rule);
    mtp_stage = static_cast<int>(i);
  }
  if (!problems.empty()) return out;
  for (size_t i = 0; i < stages.size(); ++i)
    for (char c : stages[i])
      if (c == 't') out.layer.push_back(static_cast<int>(i) % m.pp);
  if (mtp_stage >= 0) out.mtp = mtp_stage % m.pp;
  return out;
}

}  // namespace

TrainStages megatron_train_stages(int layers, const MegatronPipeline& m, Problems& problems) {
  TrainStages out;
  out.layer.assign(layers, 0);
  // Sized by the virtual stages: past the ranks' own limit (validate_side names it) nothing is split.
  if (static_cast<int64_t>(m.pp) * std::max(m.vpp, 1) > kMaxRanksPerSide) return out;
  const int pp = std::max(m.pp, 1);
  out.output = out.final_norm = out.mtp = pp - 1;
  const std::string cfg = " (megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__)";
  const bool uneven = m.first > 0 || m.last > 0;
  if (!m.layout.empty()) {
    if (uneven || m.account_for_embedding || m.account_for_loss) {
      problems.add("--pipeline-layout cannot be combined with --first-stage-layers/--last-stage-layers/"
                   "--account-for-embedding/--account-for-loss" + cfg);
      return out;
    }
    if (pp == 1) return out;  // Megatron: the offset is 0 without pipeline parallelism
    TrainStages t = from_layout(layers, m, problems);
    if (!problems.empty()) return out;
    t.final_norm = m.mtp_layers > 0 && layers > 0 ? t.layer.back() : t.output;
    return t;
  }
  if (m.vpp > 1 && pp == 1) {
    problems.add("vpp=" + n(m.vpp) + " needs pp > 1 (megatron/training/arguments.py: the interleaved schedule "
                 "runs on a pipeline)");
    return out;
  }
  if (uneven && (m.account_for_embedding || m.account_for_loss)) {
    problems.add("--first-stage-layers/--last-stage-layers cannot be combined with --account-for-embedding/"
                 "--account-for-loss" + cfg);
    return out;
  }
  if (pp == 1 || layers == 0) return out;
  const int v_count = std::max(m.vpp, 1);
  // count[k] for chunk k = v * pp + r.
  std::vector<int> count(static_cast<size_t>(pp) * v_count, 0);
  const auto chunk = [&](int r, int v) -> int& { return count[static_cast<size_t>(v) * pp + r]; };
  const std::string split = "pipeline split of " + n(layers) + " decoder layers over pp=" + n(pp) +
                            (v_count > 1 ? ", vpp=" + n(v_count) : std::string());
  if (uneven) {
    const int f = m.first, l = m.last;
    const int middle_layers = layers - f - l;
    const int middle_stages = pp - (f > 0) - (l > 0);
    if (f % v_count != 0)
      problems.add(split + ": the " + n(f) + " first-stage layers are not divisible by vpp=" + n(v_count) + cfg);
    if (l % v_count != 0)
      problems.add(split + ": the " + n(l) + " last-stage layers are not divisible by vpp=" + n(v_count) + cfg);
    if (middle_layers < 0 || (middle_layers > 0) != (middle_stages > 0))
      problems.add(split + " with first_stage_layers=" + n(f) + ", last_stage_layers=" + n(l) + ": " +
                   n(middle_layers) + " middle layers remain for " + n(middle_stages) + " middle stages" + cfg);
    else if (middle_stages > 0 && middle_layers % middle_stages != 0)
      problems.add(split + " with first_stage_layers=" + n(f) + ", last_stage_layers=" + n(l) + ": the remaining " +
                   n(middle_layers) + " layers do not divide evenly over " + n(middle_stages) +
                   " stages (use --first-stage-layers/--last-stage-layers, --pipeline-layout or --layer-map)" + cfg);
    else if (middle_stages > 0 && (middle_layers / middle_stages) % v_count != 0)
      problems.add(split + ": " + n(middle_layers / middle_stages) + " layers on each middle stage are not divisible by vpp=" +
                   n(v_count) + cfg);
    // transformer_layer.py get_transformer_layer_offset divides by the middle stages even when there
    // are none: Megatron crashes (ZeroDivisionError) on pp rank 1.
    if (middle_stages == 0 && v_count > 1)
      problems.add(split + ": with both first and last stage layers on pp=2 and vpp > 1 Megatron-Core's "
                   "get_transformer_layer_offset divides by zero middle stages (transformer_layer.py)");
    if (!problems.empty()) return out;
    for (int r = 0; r < pp; ++r)
      for (int v = 0; v < v_count; ++v)
        chunk(r, v) = (r == 0 && f > 0)        ? f / v_count
                      : (r == pp - 1 && l > 0) ? l / v_count
                                               : middle_layers / middle_stages / v_count;
  } else {
    const int e = m.account_for_embedding ? 1 : 0, lo = m.account_for_loss ? 1 : 0;
    const int total = layers + e + lo;
    const std::string with = e || lo ? std::string(" (") + (e ? "+1 embedding" : "") + (e && lo ? ", " : "") +
                                           (lo ? "+1 loss" : "") + ")"
                                     : std::string();
    if (total % pp != 0) {
      problems.add(split + with + ": " + n(total) + " layers are not divisible by pp=" + n(pp) +
                   " (use --first-stage-layers/--last-stage-layers, --pipeline-layout or --layer-map)" + cfg);
      return out;
    }
    if ((total / pp) % v_count != 0) {
      problems.add(split + with + ": " + n(total / pp) + " layers per pp rank are not divisible by vpp=" + n(v_count) +
                   " (megatron/core/transformer/transformer_block.py get_num_layers_to_build)");
      return out;
    }
    const int per_chunk = total / pp / v_count;
    for (int r = 0; r < pp; ++r)
      for (int v = 0; v < v_count; ++v)
        chunk(r, v) = per_chunk - (e && r == 0 && v == 0) - (lo && r == pp - 1 && v == v_count - 1);
    if (*std::min_element(count.begin(), count.end()) < 0) {
      problems.add(split + with + ": not enough layers for the first/last virtual pipeline stage "
                   "(megatron/core/transformer/transformer_block.py get_num_layers_to_build)");
      return out;
    }
  }
  int layer = 0;
  for (size_t k = 0; k < count.size(); ++k)
    for (int i = 0; i < count[k]; ++i) out.layer[layer++] = static_cast<int>(k % pp);
  // TransformerBlock.has_final_layernorm_in_this_stage: with MTP, beside the last decoder layer.
  out.final_norm = m.mtp_layers > 0 ? out.layer.back() : out.output;
  return out;
}

std::vector<int> vllm_layer_stages(int layers, int pp) {
  std::vector<int> count(pp, pp > 0 ? layers / pp : 0);
  const int remaining = pp > 0 ? layers % pp : 0;
  for (int i = 2; i < remaining + 2; ++i) count[pp - i] += 1;
  std::vector<int> stage;
  for (int s = 0; s < pp; ++s) stage.insert(stage.end(), count[s], s);
  return stage;
}

}  // namespace reshard
