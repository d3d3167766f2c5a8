#include "wireup/admission.h"

#include <algorithm>
#include <cassert>

namespace wireup {

Admission::Admission(uint32_t connect_window, uint32_t qp_window, uint32_t rails)
    : connect_window_(connect_window), qp_window_(qp_window), rails_(std::max<uint32_t>(rails, 1)) {}

bool Admission::try_acquire_connect(uint32_t rail) {
  Rail& r = rails_[rail];
  if (r.connects >= connect_window_) return false;
  r.peaks.connects = std::max(r.peaks.connects, ++r.connects);
  total_peaks_.connects = std::max(total_peaks_.connects, ++total_.connects);
  return true;
}

void Admission::release_connect(uint32_t rail) {
  Rail& r = rails_[rail];
  assert(r.connects > 0);
  if (r.connects == 0) return;
  --r.connects;
  --total_.connects;
}

bool Admission::next_connect_waiter(uint32_t rail, uint64_t* key) {
  Rail& r = rails_[rail];
  if (r.due.empty() || r.connects >= connect_window_) return false;
  *key = r.due.front();
  r.due.pop_front();
  return true;
}

bool Admission::connect_ready() const {
  return std::any_of(rails_.begin(), rails_.end(),
                     [&](const Rail& r) { return !r.due.empty() && r.connects < connect_window_; });
}

bool Admission::try_acquire_qp(uint32_t rail, cm::Role role) {
  Rail& r = rails_[rail];
  const int i = idx(role);
  if (r.qps[i] >= qp_window_) return false;
  r.peaks.qps[i] = std::max(r.peaks.qps[i], ++r.qps[i]);
  total_peaks_.qps[i] = std::max(total_peaks_.qps[i], ++total_.qps[i]);
  return true;
}

void Admission::release_qp(uint32_t rail, cm::Role role) {
  Rail& r = rails_[rail];
  const int i = idx(role);
  assert(r.qps[i] > 0);
  if (r.qps[i] == 0) return;
  --r.qps[i];
  --total_.qps[i];
}

bool Admission::next_waiter(uint32_t rail, cm::Role role, uint64_t* key) {
  Rail& r = rails_[rail];
  KeyQueue& q = r.waiters[idx(role)];
  if (q.empty() || r.qps[idx(role)] >= qp_window_) return false;
  *key = q.front();
  q.pop_front();
  return true;
}

bool Admission::qp_grant_ready() const {
  for (const Rail& r : rails_)
    for (int i = 0; i < 2; ++i)
      if (!r.waiters[i].empty() && r.qps[i] < qp_window_) return true;
  return false;
}

std::vector<uint64_t> Admission::take_waiters(uint32_t rail) {
  std::vector<uint64_t> keys;
  if (rail >= rails_.size()) return keys;
  Rail& r = rails_[rail];
  for (KeyQueue* q : {&r.due, &r.waiters[0], &r.waiters[1]}) {
    keys.insert(keys.end(), q->begin(), q->end());
    q->release();
  }
  return keys;
}

void Admission::drop_waiters() {
  for (Rail& r : rails_) {
    r.due.release();
    for (KeyQueue& q : r.waiters) q.release();
  }
}

}  // namespace wireup
