// Error and result types used by every layer.
//
// An Error says which call failed, with which errno, for which peer and QP, so that a
// transport reading one line of a log knows what to look at. Output parameters are set
// only on success: a Result<T> holds either a T or an Error, never both.
#pragma once

#include <cassert>
#include <cstddef>
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

  // "rdma_connect(peer 10.0.0.2:7471, qpn 0x11): Connection refused (errno 111): detail"
  std::string message() const;

  static Error from_errno(std::string call, int err, std::string detail = {});
  static Error make(ErrorCode code, std::string call, std::string detail);
  Error&& with_peer(std::string p) && { peer = std::move(p); return std::move(*this); }
  Error&& with_qpn(uint32_t q) && { qpn = q; return std::move(*this); }
};

// Maps an errno to the coarse class (EAGAIN -> would_block, EOPNOTSUPP -> not_supported, ...).
ErrorCode code_from_errno(int err);

// A string literal as a template argument: Status::would_block<"rdma_get_cm_event">().
template <size_t N>
struct CallName {
  constexpr CallName(const char (&s)[N]) {  // NOLINT: implicit by design
    for (size_t i = 0; i < N; ++i) text[i] = s[i];
  }
  char text[N];
};

// An ok Status is one null pointer: ok is what nearly every call returns (each QP transition,
// each CM call, each check), and an inline Error (three strings) would be built and torn down
// every time. A failure pays one allocation, on a path that already formats a message, except
// would-block: every idle progress() meets one, so it points at one Error per call name that
// lives as long as the program (shared, never copied, never freed).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(new Error(std::move(e))), owned_(true) {}  // NOLINT: implicit by design
  Status(const Status& o) : error_(o.owned_ ? new Error(*o.error_) : o.error_), owned_(o.owned_) {}
  Status& operator=(const Status& o) {
    if (this != &o) *this = Status(o);
    return *this;
  }
  Status(Status&& o) noexcept : error_(std::exchange(o.error_, nullptr)), owned_(std::exchange(o.owned_, false)) {}
  Status& operator=(Status&& o) noexcept {
    if (this != &o) {
      release();
      error_ = std::exchange(o.error_, nullptr);
      owned_ = std::exchange(o.owned_, false);
    }
    return *this;
  }
  ~Status() { release(); }

  static Status ok() { return Status(); }
  // EAGAIN from a non-blocking poll of `Call`: no allocation, ever.
  template <CallName Call>
  static Status would_block() {
    static const Error e = would_block_error(Call.text);
    return Status(&e);
  }
  bool is_ok() const { return error_ == nullptr; }
  explicit operator bool() const { return is_ok(); }
  // On an ok Status: a default Error (code system_error, nothing else), never a dangling one.
  const Error& error() const { return error_ ? *error_ : no_error(); }
  ErrorCode code() const { return error_ ? error_->code : ErrorCode::ok; }
  std::string message() const { return error_ ? error_->message() : std::string("ok"); }

 private:
  explicit Status(const Error* shared) : error_(shared) {}
  static Error would_block_error(const char* call);
  static const Error& no_error();
  void release() {
    if (owned_) delete error_;
    error_ = nullptr;
    owned_ = false;
  }
  const Error* error_ = nullptr;  // null: ok
  bool owned_ = false;            // false for a shared would-block Error
};

// A T, or the Status of why there is none (as absl::StatusOr). Never built from an ok Status:
// that is a bug of the caller, asserted in builds with assertions, and an invalid_state error
// naming it in those without.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT
  Result(Error e) : v_(Status(std::move(e))) {}       // NOLINT
  Result(Status s) : v_(failed(std::move(s))) {}      // NOLINT
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
  const Error& error() const { return std::get<1>(v_).error(); }
  ErrorCode code() const { return is_ok() ? ErrorCode::ok : error().code; }
  // The failure as a Status (a shared would-block stays shared: no allocation).
  Status status() const { return is_ok() ? Status() : std::get<1>(v_); }

 private:
  static Status failed(Status s) {
    assert(!s.is_ok() && "a Result is built from a value or a failure, never from an ok Status");
    if (s.is_ok()) return Error::make(ErrorCode::invalid_state, "Result", "built from an ok Status (a bug in wireup)");
    return s;
  }
  std::variant<T, Status> v_;
};

// The failure of a Status or a Result, for propagation: a shared would-block stays shared.
inline Status status_of(const Status& s) { return s; }
template <class T>
Status status_of(const Result<T>& r) {
  return r.status();
}

}  // namespace wireup

// Propagate a failed Status/Result from the current function.
#define WIREUP_TRY(expr)                                 \
  do {                                                   \
    auto wireup_try_status_ = (expr);                    \
    if (!wireup_try_status_) return ::wireup::status_of(wireup_try_status_); \
  } while (0)
