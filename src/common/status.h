// Error and result types used by every layer.
//
// An Error says which call failed, with which errno, for which peer and QP, so that a
// transport reading one line of a log knows what to look at. Output parameters are set
// only on success: a Result<T> holds either a T or an Error, never both.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace wireup {

// Coarse classes a caller may branch on; errno and the call name carry the detail.
enum class ErrorCode : uint8_t {
  ok = 0,
  invalid_argument,   // API misuse or a malformed value (caller's fault)
  not_supported,      // the device or provider cannot do this (EOPNOTSUPP and friends)
  no_device,          // no RDMA device present or none usable
  would_block,        // nothing to do now (EAGAIN); try again after progress/wait
  timed_out,
  rejected,           // the peer rejected a connection
  unreachable,
  address_error,
  route_error,
  connect_error,
  device_removed,
  protocol_error,     // the peer sent something we cannot accept (bad private data, ...)
  resource_exhausted, // ENOMEM, QP limits, backlog
  invalid_state,      // a transition not allowed from the current state
  system_error,       // any other failing system or library call
  config_error,
};

const char* to_string(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::system_error;
  std::string call;     // the library or system call that failed, e.g. "rdma_resolve_addr"
  int err = 0;          // errno (0 when not from a system call)
  std::string peer;     // peer address or rank, when known
  uint32_t qpn = 0;     // the QP involved, when known
  std::string detail;   // one human sentence
  const char* literal_call = nullptr;  // would_block_on(): the call's name, when `call` is empty

  // "rdma_connect(peer 10.0.0.2:7471, qpn 0x11): Connection refused (errno 111): detail"
  std::string message() const;

  static Error from_errno(std::string call, int err, std::string detail = {});
  static Error make(ErrorCode code, std::string call, std::string detail);
  // EAGAIN from a non-blocking poll. Every idle progress() returns one, so it keeps a pointer
  // to the call's name (a string literal) instead of a copy: no allocation.
  static Error would_block_on(const char* call);
  Error&& with_peer(std::string p) && { peer = std::move(p); return std::move(*this); }
  Error&& with_qpn(uint32_t q) && { qpn = q; return std::move(*this); }
};

// Maps an errno to the coarse class (EAGAIN -> would_block, EOPNOTSUPP -> not_supported, ...).
ErrorCode code_from_errno(int err);

// An ok Status is one null pointer: ok is what nearly every call returns (each QP transition,
// each CM call, each check), and an inline Error (three strings) would be built and torn down
// every time. A failure pays one allocation, on a path that already formats a message.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::make_unique<Error>(std::move(e))) {}  // NOLINT: implicit by design
  Status(const Status& o) : error_(o.error_ ? std::make_unique<Error>(*o.error_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) error_ = o.error_ ? std::make_unique<Error>(*o.error_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  static Status ok() { return Status(); }
  bool is_ok() const { return error_ == nullptr; }
  explicit operator bool() const { return is_ok(); }
  // On an ok Status: a default Error (code system_error, nothing else), never a dangling one.
  const Error& error() const { return error_ ? *error_ : no_error(); }
  ErrorCode code() const { return error_ ? error_->code : ErrorCode::ok; }
  std::string message() const { return error_ ? error_->message() : std::string("ok"); }

 private:
  static const Error& no_error();
  std::unique_ptr<Error> error_;  // null: ok
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT
  Result(Error e) : v_(std::move(e)) {}      // NOLINT
  Result(Status s) : v_(s.error()) {}        // only from a failed Status
  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  ErrorCode code() const { return is_ok() ? ErrorCode::ok : error().code; }
  Status status() const { return is_ok() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace wireup

// Propagate a failed Status/Result from the current function.
#define WIREUP_TRY(expr)                                 \
  do {                                                   \
    auto wireup_try_status_ = (expr);                    \
    if (!wireup_try_status_) return wireup_try_status_.error(); \
  } while (0)
