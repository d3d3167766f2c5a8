// The discrete-event core: a time-ordered queue with a sequence-number tie-break (so two
// events at the same instant run in the order they were scheduled, on every run), and
// generation-checked handles so that a timer or message for an object destroyed meanwhile is
// recognised as stale instead of touching freed memory.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "common/clock.h"

namespace wireup::prov::sim {

struct Handle {
  uint32_t index = 0;  // 0: none
  uint32_t gen = 0;
  bool valid() const { return index != 0; }
  uint64_t packed() const { return (uint64_t{index} << 32) | gen; }
  static Handle unpack(uint64_t v) { return Handle{static_cast<uint32_t>(v >> 32), static_cast<uint32_t>(v)}; }
  bool operator==(const Handle&) const = default;
};

// Objects owned elsewhere (by the user's unique_ptr), registered here while alive.
template <class T>
class HandleTable {
 public:
  Handle add(T* p) {
    uint32_t i;
    if (!free_.empty()) {
      i = free_.back();
      free_.pop_back();
    } else {
      i = static_cast<uint32_t>(slots_.size());
      slots_.push_back({});
    }
    slots_[i].ptr = p;
    return Handle{i, slots_[i].gen};
  }
  void remove(Handle h) {
    if (get(h) == nullptr) return;
    slots_[h.index].ptr = nullptr;
    ++slots_[h.index].gen;
    free_.push_back(h.index);
  }
  T* get(Handle h) const {
    if (h.index == 0 || h.index >= slots_.size()) return nullptr;
    const Slot& s = slots_[h.index];
    return s.gen == h.gen ? s.ptr : nullptr;
  }
  // In index order: deterministic.
  template <class F>
  void for_each(F&& f) const {
    for (size_t i = 1; i < slots_.size(); ++i)
      if (slots_[i].ptr != nullptr) f(*slots_[i].ptr);
  }

 private:
  struct Slot {
    T* ptr = nullptr;
    uint32_t gen = 1;
  };
  std::vector<Slot> slots_ = std::vector<Slot>(1);  // slot 0 is the null handle
  std::vector<uint32_t> free_;
};

// Values parked until a scheduled event uses them (messages, events in delivery).
template <class T>
class Slab {
 public:
  uint32_t put(T v) {
    if (!free_.empty()) {
      uint32_t i = free_.back();
      free_.pop_back();
      items_[i] = std::move(v);
      return i;
    }
    items_.push_back(std::move(v));
    return static_cast<uint32_t>(items_.size() - 1);
  }
  T& at(uint32_t i) { return items_[i]; }
  T take(uint32_t i) {
    T v = std::move(items_[i]);
    free_.push_back(i);
    return v;
  }
  size_t live() const { return items_.size() - free_.size(); }
  void clear() {
    items_.clear();
    free_.clear();
  }

 private:
  std::vector<T> items_;
  std::vector<uint32_t> free_;
};

enum class TimerKind : uint8_t {
  message,         // a = message slot: a CM message arrives
  deliver,         // a = delivery slot: an rdma_cm event becomes visible on its channel
  id_timer,        // a/b = id handle, c = token: retransmission / response timeout
  addr_done,       // a/b = id handle, c = token
  route_done,      // a/b = id handle, c = token
  timewait_exit,   // a/b = id handle, c = token
  node_death,      // a = node
  device_removal,  // a = node, b = device
  port_change,     // a = node, b = device, c = 1: the port comes up, 0: it goes down
};

struct Timer {
  Nanos at{0};
  uint64_t seq = 0;
  TimerKind kind = TimerKind::message;
  uint32_t a = 0;
  uint32_t b = 0;
  uint64_t c = 0;
};

class EventQueue {
 public:
  void push(Timer t) {
    t.seq = next_seq_++;
    heap_.push(t);
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Timer& top() const { return heap_.top(); }
  Timer pop() {
    Timer t = heap_.top();
    heap_.pop();
    return t;
  }

 private:
  struct Later {
    bool operator()(const Timer& x, const Timer& y) const {
      return x.at != y.at ? x.at > y.at : x.seq > y.seq;
    }
  };
  std::priority_queue<Timer, std::vector<Timer>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace wireup::prov::sim
