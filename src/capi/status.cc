// Status codes, their text, and where failures are recorded (handle and thread).
#include <string>

#include "capi/handles.h"
#include "common/log.h"

namespace wireup::capi {
namespace {

thread_local std::string t_last_error;

}  // namespace

wireup_status_t to_status(ErrorCode c) {
  switch (c) {
    case ErrorCode::ok: return WIREUP_OK;
    case ErrorCode::invalid_argument: return WIREUP_ERR_INVALID_ARGUMENT;
    case ErrorCode::not_supported: return WIREUP_ERR_NOT_SUPPORTED;
    case ErrorCode::no_device: return WIREUP_ERR_NO_DEVICE;
    case ErrorCode::would_block: return WIREUP_ERR_SYSTEM;  // never surfaces from the API
    case ErrorCode::timed_out: return WIREUP_ERR_TIMED_OUT;
    case ErrorCode::rejected: return WIREUP_ERR_REJECTED;
    case ErrorCode::unreachable: return WIREUP_ERR_UNREACHABLE;
    case ErrorCode::address_error:
    case ErrorCode::route_error: return WIREUP_ERR_ADDRESS;
    case ErrorCode::connect_error: return WIREUP_ERR_UNREACHABLE;
    case ErrorCode::device_removed: return WIREUP_ERR_DEVICE_REMOVED;
    case ErrorCode::protocol_error: return WIREUP_ERR_PROTOCOL;
    case ErrorCode::resource_exhausted: return WIREUP_ERR_RESOURCE;
    case ErrorCode::invalid_state: return WIREUP_ERR_INVALID_STATE;
    case ErrorCode::system_error: return WIREUP_ERR_SYSTEM;
    case ErrorCode::config_error: return WIREUP_ERR_CONFIG;
  }
  return WIREUP_ERR_INTERNAL;
}

wireup_status_t fail(std::string* slot, wireup_status_t st, const char* fn, const std::string& message) {
  std::string text = std::string(fn) + ": " + message;
  WIREUP_LOG(debug, "%s", text.c_str());
  if (slot != nullptr) *slot = text;
  t_last_error = std::move(text);
  return st;
}

wireup_status_t fail(std::string* slot, const char* fn, const Error& e) {
  return fail(slot, to_status(e.code), fn, e.message());
}

const std::string& thread_error() { return t_last_error; }

}  // namespace wireup::capi

extern "C" {

const char* wireup_strerror(wireup_status_t status) {
  switch (status) {
    case WIREUP_OK: return "success";
    case WIREUP_ERR_INVALID_ARGUMENT: return "invalid argument";
    case WIREUP_ERR_INVALID_STATE: return "call not valid in the handle's current state";
    case WIREUP_ERR_BUFFER_TOO_SMALL: return "buffer too small (the needed length was returned)";
    case WIREUP_ERR_NO_DEVICE: return "no usable RDMA device";
    case WIREUP_ERR_CONFIG: return "invalid configuration";
    case WIREUP_ERR_NOT_SUPPORTED: return "not supported by the device or provider";
    case WIREUP_ERR_TIMED_OUT: return "timed out";
    case WIREUP_ERR_REJECTED: return "connection rejected";
    case WIREUP_ERR_UNREACHABLE: return "peer unreachable";
    case WIREUP_ERR_ADDRESS: return "address or route resolution failed";
    case WIREUP_ERR_PROTOCOL: return "protocol error";
    case WIREUP_ERR_DEVICE_REMOVED: return "device removed";
    case WIREUP_ERR_RESOURCE: return "out of resources";
    case WIREUP_ERR_SYSTEM: return "system call failed";
    case WIREUP_ERR_INTERNAL: return "internal error in wireup";
  }
  return "unknown wireup status";
}

const char* wireup_last_error(const wireup_t* w) {
  return w != nullptr ? w->last_error.c_str() : wireup::capi::thread_error().c_str();
}

const char* wireup_context_last_error(const wireup_context_t* ctx) {
  return ctx != nullptr ? ctx->last_error.c_str() : wireup::capi::thread_error().c_str();
}

}  // extern "C"
