// dp_bench's out-of-band channel without a launcher: two bare processes over one TCP
// connection, as perftest's client and server run. Used when the launcher's own processes
// (mpirun, its daemons and progress threads) must not share the two vCPUs with the measured
// loops. Throws std::runtime_error naming the failing call.
#pragma once

#include <string>

#include "dp_bench.h"

namespace dp {

class TcpOob final : public Oob {
 public:
  // Rank 0: listens on `port` (all addresses) and takes one connection.
  static TcpOob listen_on(int port, bool idle_sleep);
  // Rank 1: connects to "host:port", retrying for up to 30 s while rank 0 starts.
  static TcpOob connect_to(const std::string& host_port, bool idle_sleep);
  TcpOob(TcpOob&& o) noexcept : fd_(o.fd_), sleep_(o.sleep_) { o.fd_ = -1; }
  TcpOob& operator=(TcpOob&&) = delete;
  ~TcpOob() override;

  using Oob::swap;
  std::vector<uint8_t> swap(const std::vector<uint8_t>& mine) override;
  // Spins on a non-blocking poll (as perftest's waiting side does) unless idle_sleep.
  void barrier() override;

 private:
  TcpOob(int fd, bool idle_sleep) : fd_(fd), sleep_(idle_sleep) {}
  void send_all(const void* p, size_t n);
  void recv_all(void* p, size_t n);
  int fd_;
  bool sleep_;
};

}  // namespace dp
