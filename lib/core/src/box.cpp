#include "reshard/core/box.h"

#include <algorithm>
#include <cstdint>

#include "reshard/core/error.h"

namespace reshard {
namespace {

void check_rank(size_t n) {
  if (n > static_cast<size_t>(kMaxDims))
    throw config_error("tensor has " + std::to_string(n) + " dims; at most " + std::to_string(kMaxDims) +
                       " are supported");
}

}  // namespace

Dims::Dims(std::initializer_list<int64_t> xs) {
  check_rank(xs.size());
  n = static_cast<int>(xs.size());
  std::copy(xs.begin(), xs.end(), v.begin());
}

Dims Dims::zeros(int rank) {
  check_rank(static_cast<size_t>(rank < 0 ? 0 : rank));
  Dims d;
  d.n = rank < 0 ? 0 : rank;
  return d;
}

Dims Dims::from(const std::vector<int64_t>& xs) {
  check_rank(xs.size());
  Dims d;
  d.n = static_cast<int>(xs.size());
  std::copy(xs.begin(), xs.end(), d.v.begin());
  return d;
}

int64_t Dims::product() const {
  int64_t p = 1;
  for (int i = 0; i < n; ++i) p *= v[i];
  return p;
}

bool Dims::operator==(const Dims& o) const {
  return n == o.n && std::equal(v.begin(), v.begin() + n, o.v.begin());
}

std::string Dims::str() const {
  std::string s = "[";
  for (int i = 0; i < n; ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

Range chunk_range(int64_t size, int64_t parts, int64_t index) {
  if (parts <= 0 || size <= 0) return {0, 0};
  const int64_t chunk = (size + parts - 1) / parts;
  return {std::min(index * chunk, size), std::min((index + 1) * chunk, size)};
}

bool chunks_uneven(int64_t size, int64_t parts) {
  if (parts <= 1) return false;
  // Only the tail can differ: every chunk but the last non-empty one has the full ceil size.
  const int64_t first = chunk_range(size, parts, 0).size();
  return chunk_range(size, parts, parts - 1).size() != first;
}

bool Box::empty() const {
  for (int i = 0; i < extent.n; ++i)
    if (extent[i] <= 0) return true;
  return false;
}

std::string Box::str() const {
  std::string s = "[";
  for (int i = 0; i < offset.n; ++i) {
    if (i) s += ", ";
    s += std::to_string(offset[i]) + ":" + std::to_string(offset[i] + extent[i]);
  }
  return s + "]";
}

Box full_box(const Dims& shape) { return Box{Dims::zeros(shape.n), shape}; }

std::optional<Box> intersect(const Box& a, const Box& b) {
  if (a.offset.n != b.offset.n) return std::nullopt;
  Box r{Dims::zeros(a.offset.n), Dims::zeros(a.offset.n)};
  for (int i = 0; i < a.offset.n; ++i) {
    const int64_t begin = std::max(a.offset[i], b.offset[i]);
    const int64_t end = std::min(a.offset[i] + a.extent[i], b.offset[i] + b.extent[i]);
    if (end <= begin) return std::nullopt;
    r.offset[i] = begin;
    r.extent[i] = end - begin;
  }
  return r;
}

std::optional<std::pair<Box, Box>> find_overlap(std::vector<Box>& boxes) {
  if (boxes.size() < 2) return std::nullopt;
  const int n = boxes.front().offset.n;
  int dim = 0;
  size_t most = 0;
  std::vector<int64_t> starts(boxes.size());
  for (int d = 0; d < n; ++d) {
    for (size_t i = 0; i < boxes.size(); ++i) starts[i] = boxes[i].offset.n == n ? boxes[i].offset[d] : 0;
    std::sort(starts.begin(), starts.end());
    const size_t distinct = static_cast<size_t>(std::unique(starts.begin(), starts.end()) - starts.begin());
    if (distinct > most) {
      most = distinct;
      dim = d;
    }
  }
  // A box of another dimensionality than the first (a malformed plan) compares with every box after it.
  auto start = [&](const Box& b) { return b.offset.n == n ? b.offset[dim] : 0; };
  std::sort(boxes.begin(), boxes.end(), [&](const Box& a, const Box& b) { return start(a) < start(b); });
  for (size_t a = 0; a < boxes.size(); ++a) {
    const int64_t end = boxes[a].offset.n == n ? boxes[a].offset[dim] + boxes[a].extent[dim] : INT64_MAX;
    for (size_t b = a + 1; b < boxes.size() && start(boxes[b]) < end; ++b)
      if (intersect(boxes[a], boxes[b])) return std::pair{boxes[a], boxes[b]};
  }
  return std::nullopt;
}

bool contains(const Box& outer, const Box& inner) {
  if (outer.offset.n != inner.offset.n) return false;
  if (inner.empty()) return true;
  for (int i = 0; i < outer.offset.n; ++i) {
    if (inner.offset[i] < outer.offset[i]) return false;
    if (inner.offset[i] + inner.extent[i] > outer.offset[i] + outer.extent[i]) return false;
  }
  return true;
}

Dims relative(const Box& inner, const Dims& origin) {
  Dims r = inner.offset;
  for (int i = 0; i < r.n; ++i) r[i] -= origin[i];
  return r;
}

bool is_contiguous(const Dims& extent, const Dims& shape) {
  if (extent.product() <= 1) return true;
  int d = 0;
  while (d < extent.n && extent[d] <= 1) ++d;
  // Past the first dim spanning more than one index, every dim must be whole, or rows break apart.
  for (int i = d + 1; i < extent.n; ++i)
    if (extent[i] != shape[i]) return false;
  return true;
}

int64_t linear_index(const Dims& at, const Dims& shape) {
  int64_t index = 0;
  for (int i = 0; i < shape.n; ++i) index = index * shape[i] + at[i];
  return index;
}

}  // namespace reshard
