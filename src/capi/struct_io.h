// The struct_size rule of the public structs (wireup.h, "Growing structs"): a caller's struct
// is read and written only up to min(its struct_size, the library's sizeof).
//
//  in:  fields past the caller's size keep the defaults `ours` holds already; a caller struct
//       larger than the library's is taken only if the part the library does not know is all
//       zero (a newer caller that asks for nothing new), as the kernel's copy_struct_from_user.
//  out: the library writes its fields up to the caller's size, and zeroes what the caller has
//       beyond the library's (fields this library does not fill read as 0).
//  both: a size below `min_size` (the first layout shipped) is refused, naming the struct.
// struct_size itself (the first 4 bytes) is never written: it stays the caller's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace wireup::capi {

Status struct_in(const void* caller, void* ours, size_t our_size, size_t min_size, const char* name);
Status struct_out(void* caller, const void* ours, size_t our_size, size_t min_size, const char* name);

// The typed forms: T's first member is uint32_t struct_size; `min` is the first layout's size.
template <class T>
Status read_struct(const T* caller, T& ours, size_t min, const char* name) {
  static_assert(offsetof(T, struct_size) == 0, "struct_size comes first");
  return struct_in(caller, &ours, sizeof(T), min, name);
}
template <class T>
Status write_struct(T* caller, const T& ours, size_t min, const char* name) {
  static_assert(offsetof(T, struct_size) == 0, "struct_size comes first");
  return struct_out(caller, &ours, sizeof(T), min, name);
}

}  // namespace wireup::capi
