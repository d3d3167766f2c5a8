// The liveness service's UDP socket: one non-blocking datagram socket, bound to this rank's
// listen address on a port the kernel picks, closed by its destructor (move-only).
#pragma once

#include <cstdint>
#include <span>

#include "common/status.h"
#include "provider/types.h"

namespace wireup::capi {

class UdpSocket {
 public:
  // Binds `local` (its port 0: the kernel picks one). Errors name bind's address and errno.
  static Result<UdpSocket> open(const prov::SockAddr& local);
  ~UdpSocket();
  UdpSocket(UdpSocket&& o) noexcept;
  UdpSocket& operator=(UdpSocket&& o) noexcept;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  int fd() const { return fd_; }
  const prov::SockAddr& local() const { return local_; }
  enum class Sent : uint8_t { sent, again };  // again: the socket's buffer is full (EAGAIN)
  // A datagram to `to`; an error other than EAGAIN names sendto, errno and the peer.
  Result<Sent> send_to(const prov::SockAddr& to, std::span<const uint8_t> bytes) const;
  // The next datagram waiting (its size, 0 = none waiting); a datagram longer than `buf` is
  // reported with its full length, so that the caller drops it as malformed.
  Result<size_t> receive(std::span<uint8_t> buf, prov::SockAddr& from) const;

 private:
  UdpSocket(int fd, prov::SockAddr local) : fd_(fd), local_(local) {}
  int fd_ = -1;
  prov::SockAddr local_;
};

}  // namespace wireup::capi
