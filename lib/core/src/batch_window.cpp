#include "reshard/core/batch_window.h"

#include <algorithm>

namespace reshard {

int64_t BatchWindow::limit(int64_t at) const {
  int64_t lim = size_;
  for (const Posted& p : posted_)
    if (p.end > p.begin && p.begin >= at) lim = std::min(lim, p.begin);
  return lim;
}

bool BatchWindow::overlaps(int64_t begin, int64_t end) const {
  for (const Posted& p : posted_)
    if (p.end > p.begin && p.begin < end && begin < p.end) return true;
  return false;
}

void BatchWindow::post() {
  posted_.push_back(Posted{open_, open_begin_, open_begin_ + open_.staged()});
  open_begin_ += open_.staged();
  open_.clear();
}

BatchWindow::Step BatchWindow::add(const Op& op, int64_t staged) {
  Step step;
  // The newest posted batch whose receives write what this op (a fan-out root) sends from.
  int feeds = -1;
  for (int j = 0; j < static_cast<int>(posted_.size()); ++j)
    if (posted_[j].fill.feeds(op)) feeds = j;
  if (!open_.empty() && (feeds >= 0 || open_.closes_before(policy_, op, staged, limit(open_begin_) - open_begin_))) {
    if (open_.feeds(op)) feeds = static_cast<int>(posted_.size());  // the open batch, about to be posted
    post();
    step.close = true;
  }
  if (open_.empty()) {
    int retire = std::max(feeds + 1, static_cast<int>(posted_.size()) - (policy_.window - 1));
    auto drop = [&](int n) {
      for (; n > 0; --n, ++step.retire) posted_.pop_front();
    };
    drop(retire);
    if (posted_.empty()) {
      open_begin_ = 0;
    } else if (staged > 0 && (open_begin_ + staged > limit(open_begin_) || overlaps(open_begin_, open_begin_ + staged))) {
      open_begin_ = 0;  // wrap; wait for the batches whose staging is in the way
      while (overlaps(0, staged)) drop(1);
    }
  }
  step.staging_at = open_begin_ + open_.staged();
  open_.add(op, staged);
  return step;
}

bool BatchWindow::post_open() {
  if (open_.empty()) return false;
  post();
  return true;
}

bool BatchWindow::retire_oldest() {
  if (posted_.empty()) return false;
  posted_.pop_front();
  return true;
}

int BatchWindow::close() {
  if (!open_.empty()) post();
  const int n = static_cast<int>(posted_.size());
  posted_.clear();
  open_begin_ = 0;
  return n;
}

}  // namespace reshard
