// Which recorded event a wait(stream, keep) must wait for, where one issue covers several streams'
// ops (private to lib/exec; plain C++, unit-tested on the host). NCCL's flush issues every queued op
// of every stream in posting order (nccl_transport.cpp: each communicator's operations in the global
// order), so a stream's open batch may be issued in parts, each part followed by an event on that
// stream. Counting events as batches would make wait(stream, keep) wait for the newest `keep`
// batches' parts too; here the event that ends each batch is marked when the batch is flushed, and a
// wait counts those marks (transport.h's contract: all flushed batches but the newest `keep`).
#pragma once
#include <deque>
#include <optional>
#include <utility>
#include <vector>

namespace reshard {

template <class Event>
class StreamBatchEvents {
 public:
  explicit StreamBatchEvents(int streams = 0) : streams_(static_cast<size_t>(streams)) {}

  int streams() const { return static_cast<int>(streams_.size()); }

  // `e` was recorded on `stream` behind ops of its open batch issued just now.
  void recorded(int stream, Event e) { at(stream).push_back({std::move(e), false}); }

  // `stream`'s open batch was flushed: the newest event recorded on it is behind all of its ops (a
  // batch with ops had them issued by this flush or an earlier one, each issue recording an event).
  // A flush with no ops on the stream since its last batch ends none: there is nothing to wait for.
  void batch_ended(int stream) {
    auto& q = at(stream);
    if (!q.empty() && !q.back().ends_batch) q.back().ends_batch = true;
  }

  // The event to wait for so that every flushed batch of `stream` but the newest `keep` is complete;
  // keep 0: every op issued on it. None when nothing is to be waited for.
  std::optional<Event> target(int stream, int keep) const {
    const auto k = find(stream, keep);
    if (!k) return std::nullopt;
    return at(stream)[*k].event;
  }

  // After the target completed: drops its events up to and including it and returns them (to recycle).
  std::vector<Event> release(int stream, int keep) {
    std::vector<Event> out;
    const auto k = find(stream, keep);
    if (!k) return out;
    auto& q = at(stream);
    for (size_t i = 0; i <= *k; ++i) {
      out.push_back(std::move(q.front().event));
      q.pop_front();
    }
    return out;
  }

  // Every event still held (teardown, or a setup after an error), emptied.
  std::vector<Event> take_all() {
    std::vector<Event> out;
    for (auto& q : streams_) {
      for (auto& r : q) out.push_back(std::move(r.event));
      q.clear();
    }
    return out;
  }

 private:
  struct Recorded {
    Event event;
    bool ends_batch;
  };
  std::deque<Recorded>& at(int stream) { return streams_.at(static_cast<size_t>(stream)); }
  const std::deque<Recorded>& at(int stream) const { return streams_.at(static_cast<size_t>(stream)); }

  // Index of the target in the stream's queue: keep 0, the newest event; else the end of the batch
  // keep + 1 from the newest flushed one.
  std::optional<size_t> find(int stream, int keep) const {
    const auto& q = at(stream);
    if (q.empty()) return std::nullopt;
    if (keep <= 0) return q.size() - 1;
    int ends = 0;
    for (size_t i = q.size(); i-- > 0;)
      if (q[i].ends_batch && ++ends == keep + 1) return i;
    return std::nullopt;
  }

  std::vector<std::deque<Recorded>> streams_;
};

}  // namespace reshard
