#include "common/status.h"

#include <cerrno>
#include <cstring>

namespace wireup {

const Error& Status::no_error() {
  static const Error e{};
  return e;
}

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::ok: return "ok";
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::not_supported: return "not supported";
    case ErrorCode::no_device: return "no RDMA device";
    case ErrorCode::would_block: return "would block";
    case ErrorCode::timed_out: return "timed out";
    case ErrorCode::rejected: return "rejected";
    case ErrorCode::unreachable: return "unreachable";
    case ErrorCode::address_error: return "address error";
    case ErrorCode::route_error: return "route error";
    case ErrorCode::connect_error: return "connect error";
    case ErrorCode::device_removed: return "device removed";
    case ErrorCode::protocol_error: return "protocol error";
    case ErrorCode::resource_exhausted: return "resource exhausted";
    case ErrorCode::invalid_state: return "invalid state";
    case ErrorCode::system_error: return "system error";
    case ErrorCode::config_error: return "config error";
  }
  return "unknown error";
}

ErrorCode code_from_errno(int err) {
  switch (err) {
    case 0: return ErrorCode::ok;
    case EAGAIN: return ErrorCode::would_block;
    case EINVAL: return ErrorCode::invalid_argument;
    case EOPNOTSUPP: return ErrorCode::not_supported;
    case ENODEV: case ENXIO: return ErrorCode::no_device;
    case ETIMEDOUT: return ErrorCode::timed_out;
    case ECONNREFUSED: return ErrorCode::rejected;
    case EHOSTUNREACH: case ENETUNREACH: return ErrorCode::unreachable;
    case ENOMEM: case ENOSPC: case EMFILE: case ENFILE: case ENOBUFS: return ErrorCode::resource_exhausted;
    case EBUSY: case EISCONN: case ENOTCONN: case EALREADY: return ErrorCode::invalid_state;
    default: return ErrorCode::system_error;
  }
}

Error Status::would_block_error(const char* call) {
  Error e;
  e.code = ErrorCode::would_block;
  e.call = call;
  e.err = EAGAIN;
  return e;
}

std::string Error::message() const {
  std::string m = !call.empty() ? call : std::string("wireup");
  std::string ctx;
  if (!peer.empty()) ctx += "peer " + peer;
  if (qpn != 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "qpn 0x%x", qpn);
    ctx += (ctx.empty() ? "" : ", ") + std::string(buf);
  }
  if (!ctx.empty()) m += "(" + ctx + ")";
  m += ": ";
  if (err != 0) {
    m += std::strerror(err);
    m += " (errno " + std::to_string(err) + ")";
  } else {
    m += to_string(code);
  }
  if (!detail.empty()) m += ": " + detail;
  return m;
}

Error Error::from_errno(std::string call, int err, std::string detail) {
  Error e;
  e.code = code_from_errno(err);
  e.call = std::move(call);
  e.err = err;
  e.detail = std::move(detail);
  return e;
}

Error Error::make(ErrorCode code, std::string call, std::string detail) {
  Error e;
  e.code = code;
  e.call = std::move(call);
  e.detail = std::move(detail);
  return e;
}

}  // namespace wireup
