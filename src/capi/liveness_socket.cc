#include "capi/liveness_socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "common/log.h"

namespace wireup::capi {

Result<UdpSocket> UdpSocket::open(const prov::SockAddr& local) {
  const int fd = ::socket(local.family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::from_errno("socket(SOCK_DGRAM)", errno, local.to_string());
  prov::SockAddr bound = local;
  bound.set_port(0);
  if (::bind(fd, bound.get(), bound.len()) != 0) {
    const int err = errno;
    ::close(fd);
    return Error::from_errno("bind", err, bound.to_string());
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    const int err = errno;
    ::close(fd);
    return Error::from_errno("getsockname", err, bound.to_string());
  }
  return UdpSocket(fd, prov::SockAddr::from(reinterpret_cast<const sockaddr*>(&ss)));
}

UdpSocket::~UdpSocket() {
  if (fd_ >= 0 && ::close(fd_) != 0)
    WIREUP_LOG(warn, "liveness: close(%s): errno %d", local_.to_string().c_str(), errno);
}

UdpSocket::UdpSocket(UdpSocket&& o) noexcept : fd_(std::exchange(o.fd_, -1)), local_(o.local_) {}

UdpSocket& UdpSocket::operator=(UdpSocket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    local_ = o.local_;
  }
  return *this;
}

Result<UdpSocket::Sent> UdpSocket::send_to(const prov::SockAddr& to, std::span<const uint8_t> b) const {
  if (::sendto(fd_, b.data(), b.size(), MSG_DONTWAIT | MSG_NOSIGNAL, to.get(), to.len()) >= 0) return Sent::sent;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) return Sent::again;
  return Error::from_errno("sendto", errno, "liveness peer " + to.to_string());
}

Result<size_t> UdpSocket::receive(std::span<uint8_t> buf, prov::SockAddr& from) const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  // MSG_TRUNC: the datagram's real length, so that an oversized one is seen as such.
  const ssize_t n = ::recvfrom(fd_, buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC,
                               reinterpret_cast<sockaddr*>(&ss), &len);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
    // A port unreachable from an earlier send (ICMP) comes back here: not this socket's fault.
    if (errno == ECONNREFUSED) return size_t{0};
    return Error::from_errno("recvfrom", errno, local_.to_string());
  }
  from = prov::SockAddr::from(reinterpret_cast<const sockaddr*>(&ss));
  return n == 0 ? size_t{1} << 20 : static_cast<size_t>(n);  // an empty datagram: malformed too
}

}  // namespace wireup::capi
