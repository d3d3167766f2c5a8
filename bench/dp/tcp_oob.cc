#include "tcp_oob.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace dp {
namespace {

[[noreturn]] void fail(const std::string& call) {
  throw std::runtime_error("tcp oob: " + call + ": " + std::strerror(errno));
}

void no_delay(int fd) {
  const int one = 1;  // barriers are one byte each way: no Nagle delay
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) fail("setsockopt(TCP_NODELAY)");
}

}  // namespace

TcpOob TcpOob::listen_on(int port, bool idle_sleep) {
  const int l = socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0) fail("socket");
  const int one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(l);
    fail("bind(port " + std::to_string(port) + ")");
  }
  if (::listen(l, 1) != 0) fail("listen");
  const int fd = accept(l, nullptr, nullptr);
  ::close(l);
  if (fd < 0) fail("accept");
  no_delay(fd);
  return TcpOob(fd, idle_sleep);
}

TcpOob TcpOob::connect_to(const std::string& host_port, bool idle_sleep) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("--oob-connect wants host:port, not '" + host_port + "'");
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (const int rc = getaddrinfo(host_port.substr(0, colon).c_str(), host_port.substr(colon + 1).c_str(), &hints, &res);
      rc != 0)
    throw std::runtime_error("tcp oob: getaddrinfo(" + host_port + "): " + gai_strerror(rc));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail("socket");
    if (::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      freeaddrinfo(res);
      no_delay(fd);
      return TcpOob(fd, idle_sleep);
    }
    const int err = errno;
    ::close(fd);
    if (err != ECONNREFUSED || std::chrono::steady_clock::now() > deadline) {
      freeaddrinfo(res);
      errno = err;
      fail("connect(" + host_port + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0 not listening yet
  }
}

TcpOob::~TcpOob() {
  if (fd_ >= 0) ::close(fd_);
}

void TcpOob::send_all(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t k = send(fd_, b, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) fail("send");
    b += k, n -= static_cast<size_t>(k);
  }
}

void TcpOob::recv_all(void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    if (!sleep_) {  // spin until readable, as an MPI test loop would
      pollfd pfd{fd_, POLLIN, 0};
      if (poll(&pfd, 1, 0) == 0) continue;
    }
    const ssize_t k = recv(fd_, b, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) fail("recv");
    if (k == 0) throw std::runtime_error("tcp oob: the other rank closed the connection");
    b += k, n -= static_cast<size_t>(k);
  }
}

std::vector<uint8_t> TcpOob::swap(const std::vector<uint8_t>& mine) {
  const uint64_t len = mine.size();
  send_all(&len, sizeof len);
  send_all(mine.data(), mine.size());
  uint64_t theirs_len = 0;
  recv_all(&theirs_len, sizeof theirs_len);
  if (theirs_len > (1u << 20)) throw std::runtime_error("tcp oob: the other rank announced " + std::to_string(theirs_len) + " bytes");
  std::vector<uint8_t> theirs(theirs_len);
  recv_all(theirs.data(), theirs.size());
  return theirs;
}

void TcpOob::barrier() {
  const uint8_t token = 1;
  uint8_t got = 0;
  send_all(&token, 1);
  recv_all(&got, 1);
}

}  // namespace dp
