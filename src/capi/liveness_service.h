// The liveness service of one rank: its UDP socket, the detector's decisions (wireup/liveness.h)
// and the timers, driven from the caller's progress (wireup_progress): no thread. It never
// posts anything on the transport's QPs. Datagrams are sealed with the job's MAC; what fails to
// open is counted by reason and dropped.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "capi/liveness_socket.h"
#include "wireup/liveness.h"
#include "wireup/liveness_wire.h"

namespace wireup::capi {

struct LivenessStats {
  uint64_t sent = 0;
  uint64_t send_again = 0;   // EAGAIN / ENOBUFS: the datagram is dropped, as the network may
  uint64_t send_errors = 0;  // any other sendto error (logged once per peer and errno)
  uint64_t received = 0;
  std::array<uint64_t, static_cast<size_t>(liveness::Bad::count_)> bad{};  // by reason
  uint64_t bad_total() const {
    uint64_t n = 0;
    for (uint64_t b : bad) n += b;
    return n;
  }
};

// The published address with the liveness endpoint (format 3, liveness.enable on every rank):
//   byte 0: 3   byte 1: 'L'   bytes 2-3: the UDP port, big-endian   then the address as the
//   engine publishes it (format 1 or 2); the endpoint's IP is its first rail's.
inline constexpr size_t kLivenessAddressExtra = 4;
std::vector<uint8_t> wrap_address(const std::vector<uint8_t>& engine_address, uint16_t udp_port);
struct Unwrapped {
  std::vector<uint8_t> engine_address;
  prov::SockAddr endpoint;
};
// The error names what is missing or wrong, for the caller to attach the rank.
Result<Unwrapped> unwrap_address(std::span<const uint8_t> bytes);

class LivenessService {
 public:
  // Binds a UDP socket on `local`'s address (any port); nothing is sent before start().
  // A new job key before start (wireup_set_job_key).
  Status set_job_key(uint64_t job_key);
  static Result<std::unique_ptr<LivenessService>> create(uint32_t rank, uint64_t job_key, liveness::Params p,
                                                         const prov::SockAddr& local);
  const prov::SockAddr& address() const { return sock_.local(); }
  int fd() const { return sock_.fd(); }
  // Every rank's liveness endpoint (indexed by rank; this rank's own too); ranks with the same
  // IP address count as one node for the ring.
  Status start(std::vector<prov::SockAddr> endpoints, Nanos now);
  // Reads every datagram waiting, sends what is due. Returns the work done; deaths learnt go
  // to `deaths`.
  Result<int> progress(Nanos now, std::vector<uint32_t>& deaths);
  // A death learnt elsewhere (DREQs, the launcher): the ring closes over it.
  void learn(uint32_t rank, Nanos now);
  Nanos next_due() const;
  const LivenessStats& stats() const { return stats_; }
  const liveness::Detector* detector() const { return det_.get(); }

 private:
  LivenessService(uint32_t rank, MacKey key, liveness::Params p, UdpSocket s)
      : rank_(rank), key_(key), params_(p), sock_(std::move(s)) {}
  Status send_all(std::vector<liveness::Out>& out);
  uint32_t rank_;
  MacKey key_;
  liveness::Params params_;
  UdpSocket sock_;
  std::vector<prov::SockAddr> endpoints_;
  std::unique_ptr<liveness::Detector> det_;
  LivenessStats stats_;
};

}  // namespace wireup::capi
