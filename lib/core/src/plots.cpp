#include "reshard/core/plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "reshard/core/units.h"

namespace reshard {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string header(double w, double h) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(w) + "\" height=\"" + num(h) +
         "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

std::string text(double x, double y, const std::string& s, const char* anchor = "start") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\">" + escape(s) + "</text>\n";
}

std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& title = "") {
  std::string r = "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(w, 0.0)) + "\" height=\"" +
                  num(h) + "\" fill=\"" + fill + "\"";
  if (title.empty()) return r + "/>\n";
  return r + "><title>" + escape(title) + "</title></rect>\n";
}

// White to dark blue by the fraction of the largest cell.
std::string shade(double f) {
  const int v = static_cast<int>(std::lround(255 * (1 - std::clamp(f, 0.0, 1.0))));
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", v, v, std::min(255, v + 60));
  return buf;
}

}  // namespace

std::string traffic_svg(const Plan& plan, int gpus_per_node) {
  const int world = plan.world();
  const int group = world <= 128 ? 1 : std::max(gpus_per_node, 1);
  const int n = (world + group - 1) / group;
  std::vector<double> m(static_cast<size_t>(n) * n, 0);
  auto add = [&](int s, int d, int64_t b) {
    if (s < 0 || d < 0 || s >= world || d >= world) return;
    m[static_cast<size_t>(s / group) * n + d / group] += static_cast<double>(b);
  };
  for (const Transfer& t : plan.transfers) add(t.src, t.dst, t.box.elements() * dtype_size(plan.params[t.param].dtype));
  for (const FanoutOp& f : plan.fanouts)
    if (f.group >= 0 && f.group < static_cast<int>(plan.groups.size()))
      for (int r : plan.groups[f.group].ranks)
        if (r != f.root) add(f.root, r, f.box.elements() * dtype_size(plan.params[f.param].dtype));
  for (const MiscBucket& b : plan.buckets)
    if (b.group >= 0 && b.group < static_cast<int>(plan.groups.size()))
      for (int r : plan.groups[b.group].ranks)
        if (r != b.root) add(b.root, r, b.bytes);
  const double most = std::max(1.0, *std::max_element(m.begin(), m.end()));
  const double cell = std::clamp(640.0 / n, 2.0, 24.0), left = 70, top = 50;
  const double size = cell * n;
  std::string out = header(std::max(left + size + 30, 760.0), top + size + 50);
  const std::string unit = group == 1 ? "rank" : "node (" + std::to_string(group) + " ranks)";
  out += text(left, 18, plan.model_name + ": bytes sent, source " + unit + " (rows) to destination " + unit +
                            " (columns); darkest " + format_bytes(static_cast<int64_t>(most)));
  out += text(left, 34, "ranks 0.." + std::to_string(plan.train_world() - 1) + " train, " +
                            std::to_string(plan.train_world()) + ".." + std::to_string(world - 1) + " gen");
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double v = m[static_cast<size_t>(i) * n + j];
      if (v <= 0) continue;
      out += rect(left + j * cell, top + i * cell, cell, cell, shade(v / most),
                  unit + " " + std::to_string(i) + " -> " + std::to_string(j) + ": " +
                      format_bytes(static_cast<int64_t>(v)));
    }
  out += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(size) + "\" height=\"" + num(size) +
         "\" fill=\"none\" stroke=\"#888\"/>\n";
  // The train / gen boundary.
  const double cut = static_cast<double>(plan.train_world()) / group * cell;
  out += "<line x1=\"" + num(left + cut) + "\" y1=\"" + num(top) + "\" x2=\"" + num(left + cut) + "\" y2=\"" +
         num(top + size) + "\" stroke=\"#c33\"/>\n<line x1=\"" + num(left) + "\" y1=\"" + num(top + cut) + "\" x2=\"" +
         num(left + size) + "\" y2=\"" + num(top + cut) + "\" stroke=\"#c33\"/>\n";
  out += text(left - 6, top + 10, "0", "end") + text(left - 6, top + size, std::to_string(n - 1), "end");
  out += text(left, top + size + 16, "0") + text(left + size, top + size + 16, std::to_string(n - 1), "end");
  return out + "</svg>\n";
}

std::string timeline_svg(const Plan& plan, const SimResult& r, int max_ranks) {
  const int world = static_cast<int>(r.timeline.size());
  std::vector<int> ranks(static_cast<size_t>(world));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto end_of = [&](int k) { return r.timeline[k].empty() ? 0.0 : r.timeline[k].back().end; };
  if (world > max_ranks) {  // the ranks that end last, in rank order
    std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) { return end_of(a) > end_of(b); });
    ranks.resize(static_cast<size_t>(max_ranks));
    std::sort(ranks.begin(), ranks.end());
  }
  const double total = std::max(r.total_seconds, 1e-12);
  const double left = 110, top = 46, row = 14, width = 900;
  std::string out = header(left + width + 60, top + row * static_cast<double>(ranks.size()) + 40);
  out += text(left, 16, plan.model_name + " on " + r.model.name + ": predicted " + num(total * 1e3) +
                            " ms; per rank its batches, grey while waiting for its latest peer, blue while moving");
  out += text(left, 32, world > max_ranks ? "the " + std::to_string(max_ranks) + " of " + std::to_string(world) +
                                                " ranks that end last"
                                          : "every rank");
  auto x = [&](double t) { return left + width * t / total; };
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int k = ranks[i];
    const double y = top + row * static_cast<double>(i);
    out += text(left - 6, y + row - 4, "rank " + std::to_string(k) + (plan.is_gen(k) ? " gen" : " train"), "end");
    for (const BatchSpan& b : r.timeline[k]) {
      out += rect(x(b.start), y + 1, x(b.first_ready) - x(b.start), row - 2, "#cccccc");
      out += rect(x(b.first_ready), y + 1, x(b.end) - x(b.first_ready), row - 2, "#3b6fb6",
                  "rank " + std::to_string(k) + ": " + num(b.start * 1e3) + "-" + num(b.end * 1e3) + " ms, " +
                      format_bytes(b.bytes) + " on its busiest link");
    }
  }
  const double base = top + row * static_cast<double>(ranks.size()) + 14;
  for (int t = 0; t <= 4; ++t) out += text(x(total * t / 4), base, num(total * 1e3 * t / 4) + " ms", "middle");
  return out + "</svg>\n";
}

}  // namespace reshard

namespace reshard {
namespace {

// A qualitative colour per rank (12, repeating).
const char* rank_colour(int rank) {
  static const char* kColours[] = {"#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377",
                                   "#bbbbbb", "#332288", "#117733", "#999933", "#882255", "#44aa99"};
  return kColours[static_cast<size_t>(rank) % (sizeof kColours / sizeof *kColours)];
}

// The param's tensor drawn as rows x cols (leading dims flattened into rows): the rectangles of a
// global box, one per run of its leading indices (at most `budget` more; returns how many it drew).
struct Canvas {
  double x0, y0, w, h;
  int64_t rows, cols;
};

int draw_box(std::string& out, const Canvas& c, const Dims& shape, const Box& box, const std::string& fill,
             const std::string& title, int budget) {
  const int n = shape.n;
  const int64_t last = n >= 1 ? shape[n - 1] : 1;
  const int64_t second = n >= 2 ? shape[n - 2] : 1;
  // Leading dims (all but the last two) enumerate the strips; each strip covers second-last rows.
  int64_t strips = 1;
  for (int d = 0; d + 2 < n; ++d) strips *= box.extent[d];
  int drawn = 0;
  for (int64_t s = 0; s < strips && drawn < budget; ++s) {
    int64_t rest = s, row0 = 0, stride = second;
    for (int d = n - 3; d >= 0; --d) {  // the strip's leading index, flattened into rows
      const int64_t idx = box.offset[d] + rest % box.extent[d];
      rest /= box.extent[d];
      row0 += idx * stride;
      stride *= shape[d];
    }
    const int64_t r = row0 + (n >= 2 ? box.offset[n - 2] : 0), nr = n >= 2 ? box.extent[n - 2] : 1;
    const int64_t col = n >= 1 ? box.offset[n - 1] : 0, nc = n >= 1 ? box.extent[n - 1] : 1;
    const double sy = c.h / static_cast<double>(c.rows), sx = c.w / static_cast<double>(last);
    out += rect(c.x0 + sx * static_cast<double>(col), c.y0 + sy * static_cast<double>(r), sx * static_cast<double>(nc),
                std::max(sy * static_cast<double>(nr), 0.5), fill, title);
    ++drawn;
  }
  return drawn;
}

}  // namespace

std::string param_svg(const Plan& plan, uint32_t param) {
  const ParamPlan& p = plan.params.at(param);
  const Dims& shape = p.shape;
  int64_t rows = 1;
  for (int d = 0; d + 1 < shape.n; ++d) rows *= shape[d];
  const int64_t cols = shape.n >= 1 ? shape[shape.n - 1] : 1;
  // Each panel keeps the tensor's aspect ratio within 3:1 either way.
  const double ratio = std::clamp(static_cast<double>(rows) / static_cast<double>(std::max<int64_t>(cols, 1)), 1 / 3.0, 3.0);
  const double pw = ratio >= 1 ? 300 / ratio : 300, ph = ratio >= 1 ? 300 : 300 * ratio;
  const double top = 56, gap = 80, left = 20;
  std::string out = header(std::max(left + 2 * pw + gap + 20, 760.0), top + ph + 40);
  out += text(left, 18, p.name + " " + shape.str() + " " + std::string(dtype_name(p.dtype)) + ": what each rank holds, source (left) and destination (right)");
  out += text(left, 34, "leading dims flattened into rows; colour = rank; hover a box for its ranks and coordinates");
  const Canvas src{left, top, pw, ph, rows, cols}, dst{left + pw + gap, top, pw, ph, rows, cols};
  out += text(src.x0, top - 6, "train (source) ranks");
  out += text(dst.x0, top - 6, "gen (destination) ranks");
  int budget = 4000;  // rectangles, so that a 256-expert tensor stays a small file
  auto panel = [&](const Canvas& c, const Layout& layout) {
    out += rect(c.x0, c.y0, c.w, c.h, "#f4f4f4");
    // Boxes held by several ranks (replicas) are drawn once, named by every holder.
    std::vector<std::pair<Box, std::vector<int>>> boxes;
    for (int f = 0; f < layout.mesh.size(); ++f)
      for (const LocalPiece& q : layout.local_pieces(shape, f)) {
        auto it = std::find_if(boxes.begin(), boxes.end(), [&](const auto& b) { return b.first == q.box; });
        if (it == boxes.end()) boxes.push_back({q.box, {layout.mesh.ranks[f]}});
        else it->second.push_back(layout.mesh.ranks[f]);
      }
    for (const auto& entry : boxes) {
      std::string who;
      for (size_t i = 0; i < entry.second.size() && i < 8; ++i) who += (i ? "," : "") + std::to_string(entry.second[i]);
      if (entry.second.size() > 8) who += " and " + std::to_string(entry.second.size() - 8) + " more";
      budget -= draw_box(out, c, shape, entry.first, rank_colour(entry.second.front()),
                         "rank " + who + ": " + entry.first.str(), std::max(budget, 0));
      if (shape.n <= 2) {  // one rectangle: name its ranks inside when it is big enough to read
        const int n = shape.n;
        const double sy = c.h / static_cast<double>(c.rows), sx = c.w / static_cast<double>(c.cols);
        const double bw = sx * static_cast<double>(n >= 1 ? entry.first.extent[n - 1] : 1);
        const double bh = sy * static_cast<double>(n >= 2 ? entry.first.extent[0] : 1);
        const double bx = c.x0 + sx * static_cast<double>(n >= 1 ? entry.first.offset[n - 1] : 0);
        const double by = c.y0 + sy * static_cast<double>(n >= 2 ? entry.first.offset[0] : 0);
        if (bw >= 7.0 * static_cast<double>(who.size()) + 6 && bh >= 14)
          out += text(bx + bw / 2, by + bh / 2 + 4, who, "middle");
      }
    }
    out += "<rect x=\"" + num(c.x0) + "\" y=\"" + num(c.y0) + "\" width=\"" + num(c.w) + "\" height=\"" + num(c.h) +
           "\" fill=\"none\" stroke=\"black\"/>\n";
  };
  panel(src, p.src);
  panel(dst, p.dst);
  if (budget < 0) out += text(left, top + ph + 24, "(some boxes not drawn: more than 4000 rectangles)");
  out += "</svg>\n";
  return out;
}

}  // namespace reshard
