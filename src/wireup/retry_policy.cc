#include "wireup/retry_policy.h"

#include <algorithm>
#include <cerrno>

#include "wireup/engine_types.h"
#include "wireup/private_data.h"

namespace wireup {

bool id_moved_by_kernel(const Error& e) {
  // Linux drivers/infiniband/core/cma.c: rdma_resolve_route answers EINVAL unless the id is
  // in ADDR_RESOLVED, rdma_connect_locked unless it is in ROUTE_RESOLVED, rdma_accept (which
  // librdmacm's rdma_establish reaches through ucma_process_conn_resp) unless it is in
  // CONNECT. Our own calls always come in those states; only the kernel moves an id out of
  // them behind our back: a device removal (cma_process_remove -> cma_remove_id_dev sets
  // RDMA_CM_DEVICE_REMOVAL, then queues the id's DEVICE_REMOVAL event). Seen in the VM
  // (2026-12-06): `rdma link delete rxe1` during a wireup, rdma_resolve_route, rdma_connect
  // and rdma_establish on rxe1 answered EINVAL before the removal was read. The same kernel
  // code runs over mlx5. Our own parameter checks say EINVAL with errno 0.
  if (e.err != EINVAL) return false;
  return e.call == "rdma_resolve_route" || e.call == "rdma_connect" || e.call == "rdma_establish";
}

bool retryable(const cm::Failure& f) {
  using cm::FailKind;
  switch (f.kind) {
    case FailKind::unreachable:
    case FailKind::address_error:
    case FailKind::route_error:
    case FailKind::connect_error:
      return true;
    // A local call the kernel refused because the device or the network is gone from under
    // the id (a removal: id_moved_by_kernel; by the next attempt the rail is lost and the
    // pair moved, or the whole device is, and nothing starts). Or: its
    // port's link went down (seen in the VM, 2026-12-05: with dummy1 set down mid-wireup, rxe1's
    // rdma_resolve_addr and ibv_modify_qp to RTR answered ENETUNREACH before the PORT_ERR was
    // read). A transient like ADDR_ERROR: by the next attempt the PORT_ERR has moved the pair
    // to a rail that is up (Engine::port_changed), or the link is back.
    case FailKind::local_error:
      return f.error.err == ENETUNREACH || f.error.err == ENETDOWN || id_moved_by_kernel(f.error);
    case FailKind::rejected: {
      if (f.status == prov::reject_reason::no_listener) return true;  // peer not listening yet
      // The peer's CM still remembers an old connection of our QPN or port (it restarted, or
      // our previous attempt is in its TIMEWAIT): a new attempt with a fresh QP goes through.
      if (f.status == prov::reject_reason::stale_conn) return true;
      if (f.status != prov::reject_reason::consumer) return false;    // 35 (ECE) and others
      auto h = decode(f.private_data);
      if (!h || h->kind != WireKind::reject) return true;  // not our reject: a transient refusal
      return h->reason == RejectCode::local_failure || h->reason == RejectCode::stale_attempt;
    }
    default:
      return false;
  }
}

bool notice_undelivered(const cm::Failure& answer) {
  switch (answer.kind) {
    case cm::FailKind::unreachable:
    case cm::FailKind::connect_error:
      return true;
    case cm::FailKind::rejected:
      if (answer.status == prov::reject_reason::no_listener || answer.status == prov::reject_reason::stale_conn)
        return true;
      return peer_reject_code(answer) == RejectCode::local_failure;
    default:
      return false;
  }
}

Nanos backoff(const RetryPolicy& p, uint32_t attempt, double u) {
  const double cap = static_cast<double>(p.max.count());
  double base = static_cast<double>(p.initial.count());
  for (uint32_t i = 1; i < attempt && base < cap; ++i) base *= 2;
  base = std::min(base, cap);
  u = std::clamp(u, -1.0, 1.0);
  return Nanos(static_cast<int64_t>(base * (1.0 + p.jitter * u)));
}

RetryDecision decide(const RetryPolicy& p, const cm::Failure& f, uint32_t attempt, Nanos now, double u) {
  if (!retryable(f) || attempt >= p.max_attempts) return {};
  return {true, now + backoff(p, attempt, u)};
}

double RetryScheduler::draw() {
  // SplitMix64 (Steele, Lea, Flood 2014): one add and a mix per draw, full period 2^64.
  uint64_t z = (rng_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  // The top 53 bits as a double in [0, 1), then onto [-1, 1).
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

Nanos RetryScheduler::due_after(uint32_t attempt, Nanos now) { return now + backoff(policy_, attempt, draw()); }

Nanos RetryScheduler::schedule(uint64_t key, uint32_t attempt, Nanos now) {
  const Nanos at = due_after(attempt, now);
  connects_.emplace(at, key);
  return at;
}

RetryDecision RetryScheduler::after_failure(uint64_t key, const cm::Failure& f, uint32_t attempt, Nanos now) {
  const RetryDecision d = decide(policy_, f, attempt, now, draw());
  if (d.retry) connects_.emplace(d.at, key);
  return d;
}

std::optional<uint64_t> RetryScheduler::pop_due(Nanos now) {
  if (connects_.empty() || connects_.begin()->first > now) return std::nullopt;
  const uint64_t k = connects_.begin()->second;
  connects_.erase(connects_.begin());
  return k;
}

}  // namespace wireup
