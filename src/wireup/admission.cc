#include "wireup/admission.h"

#include <cassert>

namespace wireup {

void Admission::release_connect() {
  assert(connects_ > 0);
  if (connects_ > 0) --connects_;
}

void Admission::release_qp(cm::Role r) {
  assert(qps_[idx(r)] > 0);
  if (qps_[idx(r)] > 0) --qps_[idx(r)];
}

bool Admission::next_waiter(cm::Role r, uint64_t* key) {
  KeyQueue& q = waiters_[idx(r)];
  if (q.empty() || qps_[idx(r)] >= qp_window_) return false;
  *key = q.front();
  q.pop_front();
  return true;
}

bool Admission::qp_grant_ready() const {
  for (int r = 0; r < 2; ++r)
    if (!waiters_[r].empty() && qps_[r] < qp_window_) return true;
  return false;
}

void Admission::drop_waiters() {
  for (KeyQueue& q : waiters_) q.release();
}

}  // namespace wireup
