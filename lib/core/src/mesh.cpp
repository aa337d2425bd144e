#include "reshard/core/mesh.h"

#include <algorithm>
#include <optional>

#include "reshard/core/error.h"

namespace reshard {

int Mesh::dim_index(const std::string& name) const {
  auto it = std::find(dim_names.begin(), dim_names.end(), name);
  return it == dim_names.end() ? -1 : static_cast<int>(it - dim_names.begin());
}

std::vector<int> Mesh::coords(int flat) const {
  std::vector<int> c(dim_sizes.size());
  for (int d = ndim() - 1; d >= 0; --d) {
    c[d] = flat % dim_sizes[d];
    flat /= dim_sizes[d];
  }
  return c;
}

int Mesh::flat_index_of_rank(int global_rank) const {
  // Meshes built by make_mesh are contiguous ranges; sliced ones are not, so search.
  if (!ranks.empty() && ranks.back() - ranks.front() + 1 == size() && global_rank >= ranks.front() &&
      global_rank <= ranks.back() && ranks[global_rank - ranks.front()] == global_rank)
    return global_rank - ranks.front();
  auto it = std::find(ranks.begin(), ranks.end(), global_rank);
  return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
}

Mesh Mesh::slice(const std::string& name, int coord) const {
  int d = dim_index(name);
  if (d < 0) return *this;
  Mesh out;
  for (int i = 0; i < ndim(); ++i) {
    if (i == d) continue;
    out.dim_names.push_back(dim_names[i]);
    out.dim_sizes.push_back(dim_sizes[i]);
  }
  for (int flat = 0; flat < size(); ++flat)
    if (coords(flat)[d] == coord) out.ranks.push_back(ranks[flat]);
  return out;
}

Mesh make_mesh(const std::vector<std::pair<std::string, int>>& inner_first, int offset) {
  Mesh m;
  int total = 1;
  for (auto it = inner_first.rbegin(); it != inner_first.rend(); ++it) {
    if (it->second == 1) continue;
    m.dim_names.push_back(it->first);
    m.dim_sizes.push_back(it->second);
    total *= it->second;
  }
  m.ranks.resize(total);
  for (int i = 0; i < total; ++i) m.ranks[i] = offset + i;
  return m;
}

namespace {

// One run of the current local index space along a sharded dim, [begin, end), and where it starts in
// the coordinate's new local tensor.
struct Segment {
  int64_t begin, end, at;
};

// The runs coordinate `c` of a mesh dim of `size` keeps of a local extent `n`, and its new extent.
std::vector<Segment> segments(const Placement& p, int64_t n, int size, int c, int64_t& local) {
  using Cut = Placement::Cut;
  std::vector<Segment> out;
  switch (p.cut) {
    case Cut::Chunk: {
      const Range r = chunk_range(n, size, c);
      out.push_back({r.begin, r.end, 0});
      local = r.size();
      break;
    }
    case Cut::Blocks: {
      const int64_t k = std::max<int64_t>(p.count, 1);
      const Range r = chunk_range(n, k, static_cast<int64_t>(c) * k / size);
      out.push_back({r.begin, r.end, 0});
      local = r.size();
      break;
    }
    case Cut::Pad: {
      const int64_t per = p.count / size, begin = c * per;
      out.push_back({std::min(begin, n), std::min(begin + per, n), 0});
      local = per;
      break;
    }
    case Cut::Balanced: {
      const int64_t base = n / size, rem = n % size;
      const int64_t begin = c * base + std::min<int64_t>(c, rem);
      out.push_back({begin, begin + base + (c < rem ? 1 : 0), 0});
      local = base + (c < rem ? 1 : 0);
      break;
    }
    case Cut::Cyclic: {
      local = 0;
      for (int64_t i = c; i < n; i += size) out.push_back({i, i + 1, local++});
      break;
    }
    case Cut::Groups: {
      int64_t group_rows = 0;
      for (int64_t s : p.sections) group_rows += s;
      const Range groups = chunk_range(p.count, size, c);
      local = 0;
      int64_t within = 0;
      for (int64_t s : p.sections) {
        for (int64_t g = groups.begin; g < groups.end; ++g) {
          out.push_back({g * group_rows + within, g * group_rows + within + s, local});
          local += s;
        }
        within += s;
      }
      break;
    }
    case Cut::Fused: {
      const int64_t period = p.sections[0];
      int64_t rows = 0;  // this tensor's rows per group
      for (size_t i = 1; i + 1 < p.sections.size(); i += 2) rows += p.sections[i];
      const int64_t chunk = p.count * period / size, begin = c * chunk, end = begin + chunk;
      local = chunk;
      for (int64_t g = begin / period; g < p.count && g * period < end; ++g) {
        int64_t own = g * rows;  // the run's first row in this tensor
        for (size_t i = 1; i + 1 < p.sections.size(); i += 2) {
          const int64_t len = p.sections[i], at = g * period + p.sections[i + 1];
          const int64_t lo = std::max(begin, at), hi = std::min(end, at + len);
          if (lo < hi) out.push_back({own + lo - at, own + hi - at, lo - begin});
          own += len;
        }
      }
      std::sort(out.begin(), out.end(), [](const Segment& a, const Segment& b) { return a.at < b.at; });
      break;
    }
    case Cut::Sections: {
      int64_t base = 0;
      local = 0;
      for (int64_t s : p.sections) {
        if (s < 0) {  // replicated section: every coordinate holds it whole
          out.push_back({base, base - s, local});
          local -= s;
          base -= s;
          continue;
        }
        const Range r = chunk_range(s, size, c);
        out.push_back({base + r.begin, base + r.end, local});
        local += r.size();
        base += s;
      }
      break;
    }
  }
  return out;
}

}  // namespace

std::string Placement::str() const {
  if (replicate()) return "R";
  std::string s = "S(" + std::to_string(shard_dim);
  switch (cut) {
    case Cut::Chunk:
      break;
    case Cut::Blocks:
      s += ",blocks=" + std::to_string(count);
      break;
    case Cut::Pad:
      s += ",pad=" + std::to_string(count);
      break;
    case Cut::Balanced:
      s += ",balanced";
      break;
    case Cut::Cyclic:
      s += ",cyclic";
      break;
    case Cut::Fused:
      s += ",fused=[" + std::to_string(count);
      for (int64_t x : sections) s += "," + std::to_string(x);
      s += "]";
      break;
    case Cut::Groups:
    case Cut::Sections: {
      if (cut == Cut::Groups) s += ",groups=" + std::to_string(count);
      s += ",sections=[";
      for (size_t i = 0; i < sections.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(sections[i] < 0 ? -sections[i] : sections[i]);
        if (sections[i] < 0) s += 'r';
      }
      s += "]";
      break;
    }
  }
  return s + ")";
}

namespace {

bool parse_count(const std::string& s, int64_t& out) {
  if (s.empty() || s.size() > 15 || !std::all_of(s.begin(), s.end(), ::isdigit)) return false;
  out = std::stoll(s);
  return out > 0;
}

}  // namespace

Placement Placement::parse(const std::string& s) {
  if (s == "R") return Placement{};
  auto bad = [&]() {
    return config_error("bad placement '" + s + "' (expected \"R\" or \"S(d)\" with d < " + std::to_string(kMaxDims) +
                        ", optionally \"S(d,blocks=k)\", \"S(d,pad=P)\", \"S(d,balanced)\", \"S(d,cyclic)\" or "
                        "\"S(d,sections=[a,b,...])\", \"S(d,groups=G,sections=[a,b,...])\", \"S(d,fused=[G,P,l0,a0,...])\")");
  };
  if (s.size() < 4 || s.rfind("S(", 0) != 0 || s.back() != ')') throw bad();
  const std::string body = s.substr(2, s.size() - 3);
  const size_t comma = body.find(',');
  const std::string digits = body.substr(0, comma);
  if (digits.empty() || digits.size() > 2 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) throw bad();
  Placement p = shard(std::stoi(digits));
  if (p.shard_dim >= kMaxDims) throw bad();
  if (comma == std::string::npos) return p;
  const std::string opt = body.substr(comma + 1);
  auto value = [&](std::string_view key) -> std::optional<std::string> {
    if (opt.rfind(key, 0) != 0) return std::nullopt;
    return opt.substr(key.size());
  };
  if (opt == "balanced") {
    p.cut = Cut::Balanced;
  } else if (opt == "cyclic") {
    p.cut = Cut::Cyclic;
  } else if (auto blocks = value("blocks=")) {
    p.cut = Cut::Blocks;
    if (!parse_count(*blocks, p.count)) throw bad();
  } else if (auto fused = value("fused=")) {
    p.cut = Cut::Fused;
    if (fused->size() < 3 || fused->front() != '[' || fused->back() != ']') throw bad();
    std::vector<int64_t> xs;
    const std::string list = fused->substr(1, fused->size() - 2);
    for (size_t at = 0;;) {
      const size_t next = list.find(',', at);
      const std::string item = list.substr(at, next - at);
      int64_t n = 0;
      if (item != "0" && !parse_count(item, n)) throw bad();
      xs.push_back(n);
      if (next == std::string::npos) break;
      at = next + 1;
    }
    if (xs.size() < 4 || xs.size() % 2 != 0 || xs.size() > 2 + 2 * 1024 || xs[0] <= 0 || xs[1] <= 0) throw bad();
    p.count = xs[0];
    p.sections.assign(xs.begin() + 1, xs.end());
  } else if (auto padded = value("pad=")) {
    p.cut = Cut::Pad;
    if (!parse_count(*padded, p.count)) throw bad();
  } else if (auto sections = value("sections=") ? value("sections=") : std::optional<std::string>{}; sections ||
             opt.rfind("groups=", 0) == 0) {
    p.cut = Cut::Sections;
    if (!sections) {  // "groups=G,sections=[...]"
      const size_t comma2 = opt.find(',');
      if (comma2 == std::string::npos || opt.compare(comma2 + 1, 9, "sections=") != 0) throw bad();
      if (!parse_count(opt.substr(7, comma2 - 7), p.count)) throw bad();
      p.cut = Cut::Groups;
      sections = opt.substr(comma2 + 10);
    }
    if (sections->size() < 3 || sections->front() != '[' || sections->back() != ']') throw bad();
    const std::string list = sections->substr(1, sections->size() - 2);
    size_t at = 0;
    while (true) {
      const size_t next = list.find(',', at);
      int64_t n = 0;
      std::string item = list.substr(at, next - at);
      const bool replicated = !item.empty() && item.back() == 'r';
      if (replicated) item.pop_back();
      if (!parse_count(item, n)) throw bad();
      p.sections.push_back(replicated ? -n : n);
      if (next == std::string::npos) break;
      at = next + 1;
    }
    if (p.sections.size() > 64) throw bad();
  } else {
    throw bad();
  }
  return p;
}

std::string Placement::check(int64_t extent, int size) const {
  const std::string at = str() + " of " + std::to_string(extent) + " over " + std::to_string(size);
  // A rank's pieces are listed one by one: bound them (a hand-edited plan must not ask for billions).
  constexpr int64_t kMaxPieces = int64_t{1} << 16;
  if ((cut == Cut::Cyclic && extent / std::max(size, 1) > kMaxPieces) ||
      (cut == Cut::Groups && count * static_cast<int64_t>(sections.size()) / std::max(size, 1) > kMaxPieces) ||
      (cut == Cut::Fused && count * static_cast<int64_t>(sections.size() / 2) / std::max(size, 1) > kMaxPieces))
    return at + ": more than " + std::to_string(kMaxPieces) + " pieces per rank";
  switch (cut) {
    case Cut::Blocks:
      if (count <= 0 || size % count != 0)
        return at + ": " + std::to_string(count) + " blocks do not divide the mesh dim";
      if (extent % count != 0) return at + ": the dim does not split into " + std::to_string(count) + " blocks";
      break;
    case Cut::Pad:
      if (count < extent || count % size != 0)
        return at + ": padded size " + std::to_string(count) + " is below the dim or not a multiple of the mesh dim";
      break;
    case Cut::Sections: {
      int64_t sum = 0;
      for (int64_t s : sections) sum += s < 0 ? -s : s;
      if (sum != extent) return at + ": sections sum to " + std::to_string(sum);
      break;
    }
    case Cut::Fused: {
      if (sections.size() < 3 || sections.size() % 2 != 1 || count <= 0 || sections[0] <= 0)
        return at + ": needs G > 0 groups of P > 0 rows and (rows, position) runs";
      int64_t rows = 0;
      std::vector<std::pair<int64_t, int64_t>> spans;
      for (size_t i = 1; i + 1 < sections.size(); i += 2) {
        if (sections[i] <= 0 || sections[i + 1] < 0 || sections[i + 1] + sections[i] > sections[0])
          return at + ": a run of " + std::to_string(sections[i]) + " rows at " + std::to_string(sections[i + 1]) +
                 " is empty or outside the fused group of " + std::to_string(sections[0]) + " rows";
        rows += sections[i];
        spans.push_back({sections[i + 1], sections[i + 1] + sections[i]});
      }
      std::sort(spans.begin(), spans.end());
      for (size_t i = 1; i < spans.size(); ++i)
        if (spans[i].first < spans[i - 1].second) return at + ": runs overlap in the fused group";
      if (count * rows != extent) return at + ": " + std::to_string(count) + " groups of " +
                                         std::to_string(rows) + " rows do not make the dim";
      const int64_t fused_rows = count * sections[0];
      if (fused_rows % size != 0)
        return at + ": the fused " + std::to_string(fused_rows) + " rows do not split into " + std::to_string(size) +
               " equal chunks";
      break;
    }
    case Cut::Groups: {
      int64_t sum = 0;
      for (int64_t s : sections) sum += s < 0 ? 0 : s;
      if (count <= 0 || count % size != 0) return at + ": " + std::to_string(count) + " groups do not divide the mesh dim";
      if (sum * count != extent || std::any_of(sections.begin(), sections.end(), [](int64_t s) { return s <= 0; }))
        return at + ": " + std::to_string(count) + " groups of " + std::to_string(sum) + " rows do not make the dim";
      break;
    }
    default:
      break;
  }
  return "";
}

bool Layout::plain() const {
  return std::all_of(placements.begin(), placements.end(), [](const Placement& p) { return p.plain(); });
}

bool Layout::single_box() const {
  return std::all_of(placements.begin(), placements.end(), [](const Placement& p) { return p.contiguous(); });
}

Box Layout::local_box(const Dims& global_shape, int flat) const {
  Box b = full_box(global_shape);
  const std::vector<int> c = mesh.coords(flat);
  for (int d = 0; d < mesh.ndim(); ++d) {
    const Placement& p = placements[d];
    if (p.replicate()) continue;
    // Nested sharding of one tensor dim: cut the current range again.
    const int td = p.shard_dim;
    int64_t local = 0;
    const std::vector<Segment> segs = segments(p, b.extent[td], mesh.dim_sizes[d], c[d], local);
    const Segment& s = segs.empty() ? Segment{b.extent[td], b.extent[td], 0} : segs.front();
    b.offset[td] += s.begin;
    b.extent[td] = std::max<int64_t>(s.end - s.begin, 0);
  }
  return b;
}

std::vector<LocalPiece> Layout::local_pieces(const Dims& global_shape, int flat) const {
  if (single_box()) {  // one box at the local origin (or nothing): the common case, no walk
    const Box b = local_box(global_shape, flat);
    if (b.empty()) return {};
    return {LocalPiece{b, Dims::zeros(global_shape.n)}};
  }
  std::vector<LocalPiece> pieces{{full_box(global_shape), Dims::zeros(global_shape.n)}};
  Dims shape = global_shape;
  const std::vector<int> c = mesh.coords(flat);
  for (int d = 0; d < mesh.ndim(); ++d) {
    const Placement& p = placements[d];
    if (p.replicate()) continue;
    const int td = p.shard_dim;
    int64_t local = 0;
    const std::vector<Segment> segs = segments(p, shape[td], mesh.dim_sizes[d], c[d], local);
    shape[td] = local;
    std::vector<LocalPiece> next;
    for (const LocalPiece& piece : pieces) {
      const int64_t a = piece.at[td], e = piece.box.extent[td];
      for (const Segment& s : segs) {
        const int64_t lo = std::max(a, s.begin), hi = std::min(a + e, s.end);
        if (lo >= hi) continue;
        LocalPiece q = piece;
        q.box.offset[td] += lo - a;
        q.box.extent[td] = hi - lo;
        q.at[td] = s.at + (lo - s.begin);
        next.push_back(q);
      }
    }
    pieces = std::move(next);
  }
  pieces.erase(std::remove_if(pieces.begin(), pieces.end(), [](const LocalPiece& q) { return q.box.empty(); }),
               pieces.end());
  return pieces;
}

int64_t Layout::held_elements(const Dims& global_shape, int flat) const {
  if (single_box()) return local_box(global_shape, flat).elements();
  int64_t n = 0;
  for (const LocalPiece& q : local_pieces(global_shape, flat)) n += q.box.elements();
  return n;
}

Dims Layout::local_shape(const Dims& global_shape, int flat) const {
  Dims shape = global_shape;
  const std::vector<int> c = mesh.coords(flat);
  for (int d = 0; d < mesh.ndim(); ++d) {
    const Placement& p = placements[d];
    if (p.replicate()) continue;
    int64_t local = 0;
    segments(p, shape[p.shard_dim], mesh.dim_sizes[d], c[d], local);
    shape[p.shard_dim] = local;
  }
  return shape;
}

bool Layout::uneven(const Dims& global_shape) const {
  if (!plain()) {
    int64_t first = -1;
    for (int f = 0; f < mesh.size(); ++f) {
      int64_t held = 0;
      for (const LocalPiece& q : local_pieces(global_shape, f)) held += q.box.elements();
      if (held != local_shape(global_shape, f).product()) return true;  // padding
      if (first >= 0 && held != first) return true;
      first = held;
    }
    return false;
  }
  Dims sizes = global_shape;
  for (int d = 0; d < mesh.ndim(); ++d) {
    const Placement& p = placements[d];
    if (p.replicate()) continue;
    if (chunks_uneven(sizes[p.shard_dim], mesh.dim_sizes[d])) return true;
    sizes[p.shard_dim] = chunk_range(sizes[p.shard_dim], mesh.dim_sizes[d], 0).size();
  }
  return false;
}

}  // namespace reshard
