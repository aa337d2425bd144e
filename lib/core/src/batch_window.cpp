#include "reshard/core/batch_window.h"

#include <algorithm>

namespace reshard {

BatchWindow::BatchWindow(const BatchPolicy& policy, int64_t staging_size)
    : policy_(policy), size_(staging_size),
      open_(static_cast<size_t>(policy.per_stream_window ? std::max(1, policy.streams) : 1)) {
  for (size_t l = 0; l < open_.size(); ++l) open_[l].lane = static_cast<int>(l);
  feeds_.assign(open_.size(), -1);
}

int BatchWindow::posted(int lane) const {
  int n = 0;
  for (const Batch& b : posted_) n += b.lane == lane ? 1 : 0;
  return n;
}

int64_t BatchWindow::limit(int64_t at) const {
  int64_t lim = size_;
  auto scan = [&](const Batch& b) {
    for (const auto& [begin, end] : b.runs)
      if (begin >= at) lim = std::min(lim, begin);
  };
  for (const Batch& b : posted_) scan(b);
  for (const Batch& b : open_) scan(b);
  return lim;
}

bool BatchWindow::overlaps(const Batch& b, int64_t begin, int64_t end) const {
  for (const auto& [from, to] : b.runs)
    if (from < end && begin < to) return true;
  return false;
}

bool BatchWindow::overlaps(int64_t begin, int64_t end) const {
  for (const Batch& b : posted_)
    if (overlaps(b, begin, end)) return true;
  for (const Batch& b : open_)
    if (overlaps(b, begin, end)) return true;
  return false;
}

void BatchWindow::post(int lane) {
  Batch& o = open_[static_cast<size_t>(lane)];
  if (o.fill.empty()) return;
  posted_.push_back(std::move(o));
  o = Batch{};
  o.lane = lane;
  step_.close.push_back(lane);
}

void BatchWindow::post_older() {
  for (bool again = true; again;) {
    again = false;
    int64_t newest = -1;
    for (const Batch& b : posted_) newest = std::max(newest, b.last);
    for (Batch& o : open_)
      if (!o.fill.empty() && o.first < newest) {
        post(o.lane);
        again = true;
      }
  }
}

void BatchWindow::retire_lane(int lane) {
  // A lane waits only with its own open batch posted (the transports wait for a stream's flushed ops).
  if (!open_[static_cast<size_t>(lane)].fill.empty()) {
    post(lane);
    post_older();
  }
  for (auto it = posted_.begin(); it != posted_.end(); ++it)
    if (it->lane == lane) {
      posted_.erase(it);
      step_.retire.push_back(lane);
      return;
    }
}

void BatchWindow::retire_through(int64_t first) {
  for (;;) {
    auto it = std::find_if(posted_.begin(), posted_.end(), [&](const Batch& b) { return b.first == first; });
    if (it == posted_.end()) return;
    retire_lane(it->lane);
  }
}

const BatchWindow::Step& BatchWindow::add(const Op& op, int64_t staged) {
  step_.close.clear();
  step_.retire.clear();
  const int l = lane(op);
  // The newest posted batch of each lane whose receives write what this op (a fan-out root) sends
  // from, and the open batches that do (posted now, to be waited for).
  std::fill(feeds_.begin(), feeds_.end(), -1);
  bool feeds = false;
  if (op.fanout && op.root) {
    for (const Batch& b : posted_)
      if (b.fill.feeds(op)) feeds_[static_cast<size_t>(b.lane)] = b.first, feeds = true;
    for (Batch& o : open_)
      if (!o.fill.empty() && o.fill.feeds(op)) {
        feeds_[static_cast<size_t>(o.lane)] = o.first;
        feeds = true;
        if (o.lane != l) post(o.lane);
      }
  }
  Batch* o = &open_[static_cast<size_t>(l)];
  if (!o->fill.empty() &&
      (feeds || o->fill.closes_before(policy_, op, staged, o->fill.staged() + limit(cursor_) - cursor_)))
    post(l);
  o = &open_[static_cast<size_t>(l)];
  if (o->fill.empty()) {
    const bool window_full = posted(l) > policy_.window - 1;
    if (feeds || window_full) {
      post_older();
      for (int64_t first : feeds_)
        if (first >= 0) retire_through(first);
      while (posted(l) > policy_.window - 1) retire_lane(l);
    }
    bool in_flight = !posted_.empty();
    for (const Batch& b : open_) in_flight = in_flight || !b.fill.empty();
    if (!in_flight) {
      cursor_ = 0;
    } else if (staged > 0 && (cursor_ + staged > limit(cursor_) || overlaps(cursor_, cursor_ + staged))) {
      cursor_ = 0;  // wrap; wait for the batches whose staging is in the way
      if (overlaps(0, staged)) {
        for (const Batch& b : open_)
          if (overlaps(b, 0, staged)) post(b.lane);
        post_older();
        while (overlaps(0, staged)) {
          auto it = std::find_if(posted_.begin(), posted_.end(), [&](const Batch& b) { return overlaps(b, 0, staged); });
          retire_through(it->first);
        }
      }
    }
    o->first = seq_;
  }
  step_.staging_at = cursor_;
  if (staged > 0) {
    if (!o->runs.empty() && o->runs.back().second == cursor_) o->runs.back().second += staged;
    else o->runs.emplace_back(cursor_, cursor_ + staged);
    cursor_ += staged;
  }
  o->last = seq_++;
  o->fill.add(op, staged);
  return step_;
}

const BatchWindow::Step& BatchWindow::post_open() {
  step_.close.clear();
  step_.retire.clear();
  for (int l = 0; l < lanes(); ++l) post(l);
  return step_;
}

int BatchWindow::retire_oldest() {
  if (posted_.empty()) return -1;
  const int lane = posted_.front().lane;
  posted_.pop_front();
  return lane;
}

const BatchWindow::Step& BatchWindow::close() {
  post_open();
  for (const Batch& b : posted_) step_.retire.push_back(b.lane);
  posted_.clear();
  cursor_ = 0;
  return step_;
}

}  // namespace reshard
