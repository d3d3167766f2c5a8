#include "capi/struct_io.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace wireup::capi {
namespace {

uint32_t size_of(const void* caller) {
  uint32_t s;
  std::memcpy(&s, caller, sizeof s);
  return s;
}

Status check_size(uint32_t size, size_t min_size, size_t our_size, const char* name) {
  if (size >= min_size) return Status::ok();
  return Error::make(ErrorCode::invalid_argument, name,
                     "struct_size " + std::to_string(size) + " is below the smallest layout (" +
                         std::to_string(min_size) + " bytes; this library's is " + std::to_string(our_size) +
                         "): initialize the struct with its init function or WIREUP_STRUCT_INIT");
}

}  // namespace

Status struct_in(const void* caller, void* ours, size_t our_size, size_t min_size, const char* name) {
  const uint32_t size = size_of(caller);
  if (Status s = check_size(size, min_size, our_size, name); !s) return s;
  const auto* c = static_cast<const unsigned char*>(caller);
  // A newer caller's fields past ours: taken only if unset (all zero), else it asks for
  // something this library cannot do.
  for (size_t i = our_size; i < size; ++i)
    if (c[i] != 0)
      return Error::make(ErrorCode::invalid_argument, name,
                         "struct_size " + std::to_string(size) + " > this library's " + std::to_string(our_size) +
                             " and byte " + std::to_string(i) +
                             " of the part it does not know is set: the caller needs a newer libwireup");
  const size_t n = std::min<size_t>(size, our_size);
  std::memcpy(static_cast<unsigned char*>(ours) + sizeof(uint32_t), c + sizeof(uint32_t), n - sizeof(uint32_t));
  return Status::ok();
}

Status struct_out(void* caller, const void* ours, size_t our_size, size_t min_size, const char* name) {
  const uint32_t size = size_of(caller);
  if (Status s = check_size(size, min_size, our_size, name); !s) return s;
  auto* c = static_cast<unsigned char*>(caller);
  const size_t n = std::min<size_t>(size, our_size);
  std::memcpy(c + sizeof(uint32_t), static_cast<const unsigned char*>(ours) + sizeof(uint32_t), n - sizeof(uint32_t));
  if (size > our_size) std::memset(c + our_size, 0, size - our_size);
  return Status::ok();
}

}  // namespace wireup::capi
