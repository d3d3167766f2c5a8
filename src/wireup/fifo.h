// A first-in first-out queue on one vector: pushed at the back, consumed from a head index.
// Unlike std::deque (libstdc++ allocates a map and a 512-byte block even for an empty one),
// an empty Fifo holds no heap memory, and a queue filled once and drained (the bulk start
// order) costs exactly its elements.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace wireup {

template <class T>
class Fifo {
 public:
  bool empty() const { return head_ == v_.size(); }
  size_t size() const { return v_.size() - head_; }
  void reserve(size_t n) { v_.reserve(head_ + n); }
  template <class... A>
  void emplace_back(A&&... a) { v_.emplace_back(std::forward<A>(a)...); }
  void push_back(const T& x) { v_.push_back(x); }
  const T& front() const { return v_[head_]; }
  void pop_front() {
    ++head_;
    if (head_ == v_.size()) {
      v_.clear();  // drained: start over in the same capacity
      head_ = 0;
    } else if (head_ >= kCompactAt && 2 * head_ >= v_.size()) {
      // Never drained (asks keep coming): drop the consumed half, at most as many moves as
      // pops, so that memory stays bounded by the queue's own length.
      v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  // The waiting elements, front first.
  auto begin() const { return v_.begin() + static_cast<std::ptrdiff_t>(head_); }
  auto end() const { return v_.end(); }
  void clear() {
    v_.clear();
    head_ = 0;
  }
  // Drops the waiting elements `pred` holds for, the others keep their order.
  template <class Pred>
  void remove_if(Pred pred) {
    v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
    std::erase_if(v_, pred);
  }
  // Frees the storage.
  void release() {
    std::vector<T>().swap(v_);
    head_ = 0;
  }

 private:
  static constexpr size_t kCompactAt = 64;
  std::vector<T> v_;
  size_t head_ = 0;
};

}  // namespace wireup
