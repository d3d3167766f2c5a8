// wireup_version: the library's own version (wireup_version.h holds the headers').
#include "wireup/wireup.h"

extern "C" {

void wireup_version(unsigned* major, unsigned* minor, unsigned* patch) {
  if (major != nullptr) *major = WIREUP_VERSION_MAJOR;
  if (minor != nullptr) *minor = WIREUP_VERSION_MINOR;
  if (patch != nullptr) *patch = WIREUP_VERSION_PATCH;
}

const char* wireup_version_string(void) { return WIREUP_VERSION_STRING; }

}  // extern "C"
