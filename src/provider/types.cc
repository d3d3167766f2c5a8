#include "provider/types.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

namespace wireup::prov {

Result<SockAddr> SockAddr::parse(std::string_view text) {
  std::string host(text);
  std::string port_text;
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    if (close == std::string::npos)
      return Error::make(ErrorCode::invalid_argument, "SockAddr::parse",
                         "address '" + std::string(text) + "' has '[' without ']'");
    if (close + 1 < host.size()) {
      if (host[close + 1] != ':')
        return Error::make(ErrorCode::invalid_argument, "SockAddr::parse",
                           "address '" + std::string(text) + "': expected ':' after ']'");
      port_text = host.substr(close + 2);
    }
    host = host.substr(1, close - 1);
  } else if (auto colon = host.find(':'); colon != std::string::npos &&
                                          host.find(':', colon + 1) == std::string::npos) {
    port_text = host.substr(colon + 1);
    host.resize(colon);
  }
  unsigned long port = 0;
  if (!port_text.empty()) {
    char* end = nullptr;
    errno = 0;
    port = std::strtoul(port_text.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || port > 65535)
      return Error::make(ErrorCode::invalid_argument, "SockAddr::parse",
                         "address '" + std::string(text) + "': port '" + port_text +
                             "' is not a number in [0, 65535]");
  }
  SockAddr a;
  auto* in4 = reinterpret_cast<sockaddr_in*>(&a.ss_);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.ss_);
  if (inet_pton(AF_INET, host.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(static_cast<uint16_t>(port));
  } else if (inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(port));
  } else {
    return Error::make(ErrorCode::invalid_argument, "SockAddr::parse",
                       "'" + host + "' is not a numeric IPv4 or IPv6 address");
  }
  return a;
}

SockAddr SockAddr::from(const sockaddr* sa) {
  SockAddr a;
  if (sa == nullptr) return a;
  if (sa->sa_family == AF_INET)
    std::memcpy(&a.ss_, sa, sizeof(sockaddr_in));
  else if (sa->sa_family == AF_INET6)
    std::memcpy(&a.ss_, sa, sizeof(sockaddr_in6));
  return a;
}

SockAddr SockAddr::ipv4(uint32_t host_order_addr, uint16_t port) {
  SockAddr a;
  auto* in4 = reinterpret_cast<sockaddr_in*>(&a.ss_);
  in4->sin_family = AF_INET;
  in4->sin_addr.s_addr = htonl(host_order_addr);
  in4->sin_port = htons(port);
  return a;
}

socklen_t SockAddr::len() const {
  switch (ss_.ss_family) {
    case AF_INET: return sizeof(sockaddr_in);
    case AF_INET6: return sizeof(sockaddr_in6);
    default: return 0;
  }
}

uint16_t SockAddr::port() const {
  switch (ss_.ss_family) {
    case AF_INET: return ntohs(reinterpret_cast<const sockaddr_in*>(&ss_)->sin_port);
    case AF_INET6: return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss_)->sin6_port);
    default: return 0;
  }
}

void SockAddr::set_port(uint16_t port) {
  if (ss_.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&ss_)->sin_port = htons(port);
  else if (ss_.ss_family == AF_INET6)
    reinterpret_cast<sockaddr_in6*>(&ss_)->sin6_port = htons(port);
}

uint32_t SockAddr::ipv4_addr() const {
  if (ss_.ss_family != AF_INET) return 0;
  return ntohl(reinterpret_cast<const sockaddr_in*>(&ss_)->sin_addr.s_addr);
}

std::string SockAddr::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss_.ss_family == AF_INET) {
    // By hand, as inet_ntop would print it: the engine names the source of every request,
    // and inet_ntop's sprintf costs more than the rest of handling one.
    const uint32_t ip = ipv4_addr();
    char* p = buf;
    auto put = [&p](unsigned v) {
      if (v >= 100) *p++ = static_cast<char>('0' + v / 100);
      if (v >= 10) *p++ = static_cast<char>('0' + v / 10 % 10);
      *p++ = static_cast<char>('0' + v % 10);
    };
    for (int shift = 24; shift >= 0; shift -= 8) {
      put((ip >> shift) & 0xff);
      *p++ = shift != 0 ? '.' : ':';
    }
    return std::string(buf, p) + std::to_string(port());
  }
  if (ss_.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss_)->sin6_addr, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(port());
  }
  return "<unset>";
}

bool SockAddr::operator==(const SockAddr& o) const {
  return len() == o.len() && std::memcmp(&ss_, &o.ss_, len()) == 0;
}

const char* to_string(CmEventType t) {
  static const char* names[] = {
      "ADDR_RESOLVED", "ADDR_ERROR",  "ROUTE_RESOLVED", "ROUTE_ERROR",    "CONNECT_REQUEST",
      "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED",    "ESTABLISHED",
      "DISCONNECTED", "DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE",
      "TIMEWAIT_EXIT"};
  auto i = static_cast<size_t>(t);
  return i < std::size(names) ? names[i] : "UNKNOWN_EVENT";
}

const char* to_string(DeviceEventType t) {
  static const char* names[] = {
      "CQ_ERR",       "QP_FATAL",   "QP_REQ_ERR",   "QP_ACCESS_ERR", "COMM_EST",
      "SQ_DRAINED",   "PATH_MIG",   "PATH_MIG_ERR", "DEVICE_FATAL",  "PORT_ACTIVE",
      "PORT_ERR",     "LID_CHANGE", "PKEY_CHANGE",  "SM_CHANGE",     "SRQ_ERR",
      "SRQ_LIMIT_REACHED", "QP_LAST_WQE_REACHED", "CLIENT_REREGISTER", "GID_CHANGE", "WQ_FATAL"};
  auto i = static_cast<size_t>(t);
  return i < std::size(names) ? names[i] : "UNKNOWN_ASYNC_EVENT";
}

DeviceEventScope scope_of(DeviceEventType t) {
  using T = DeviceEventType;
  switch (t) {
    case T::cq_err: return DeviceEventScope::cq;
    case T::qp_fatal:
    case T::qp_req_err:
    case T::qp_access_err:
    case T::comm_est:
    case T::sq_drained:
    case T::path_mig:
    case T::path_mig_err:
    case T::qp_last_wqe_reached: return DeviceEventScope::qp;
    case T::srq_err:
    case T::srq_limit_reached: return DeviceEventScope::srq;
    case T::wq_fatal: return DeviceEventScope::wq;
    case T::port_active:
    case T::port_err:
    case T::lid_change:
    case T::pkey_change:
    case T::sm_change:
    case T::client_reregister:
    case T::gid_change: return DeviceEventScope::port;
    case T::device_fatal: return DeviceEventScope::device;
  }
  return DeviceEventScope::device;
}

std::string DeviceEvent::describe() const {
  std::string s = device + ": " + to_string(type);
  char buf[32];
  if (scope_of(type) == DeviceEventScope::qp) {
    std::snprintf(buf, sizeof buf, " (qpn 0x%x)", qpn);
    s += buf;
  } else if (scope_of(type) == DeviceEventScope::port) {
    s += " (port " + std::to_string(port) + ")";
  }
  return s;
}

const char* to_string(QpState s) {
  static const char* names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "UNKNOWN"};
  auto i = static_cast<size_t>(s);
  return i < std::size(names) ? names[i] : "UNKNOWN";
}

const char* to_string(PortState s) {
  static const char* names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER", "UNKNOWN"};
  auto i = static_cast<size_t>(s);
  return i < std::size(names) ? names[i] : "UNKNOWN";
}

const char* to_string(WrOpcode op) {
  static const char* names[] = {"RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "SEND", "SEND_WITH_IMM",
                                "RDMA_READ", "ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD"};
  auto i = static_cast<size_t>(op);
  return i < std::size(names) ? names[i] : "UNKNOWN";
}

namespace qp_mask {
std::string names(uint32_t mask) {
  static const char* bits[] = {"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS",
                               "PKEY_INDEX", "PORT", "QKEY", "AV", "PATH_MTU", "TIMEOUT",
                               "RETRY_CNT", "RNR_RETRY", "RQ_PSN", "MAX_QP_RD_ATOMIC", "ALT_PATH",
                               "MIN_RNR_TIMER", "SQ_PSN", "MAX_DEST_RD_ATOMIC", "PATH_MIG_STATE",
                               "CAP", "DEST_QPN"};
  std::string out;
  for (size_t i = 0; i < std::size(bits); ++i) {
    if (mask & (1u << i)) {
      if (!out.empty()) out += '|';
      out += bits[i];
    }
  }
  return out.empty() ? "none" : out;
}
}  // namespace qp_mask

}  // namespace wireup::prov
