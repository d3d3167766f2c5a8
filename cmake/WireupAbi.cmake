# The ABI check: a shared library of the same objects as libwireup.a (never installed: the
# shipped library stays the archive), exporting only the C API (abi/libwireup.map), so that
# libabigail can read the ABI from its DWARF. scripts/abi-check.sh compares it with the
# committed reference abi/libwireup.abi (ctest abi.check; --update refreshes the reference).
# Included from WireupPackage.cmake once `objs` holds the shipped objects.
add_library(wireup_abi_so SHARED ${objs})
set_target_properties(wireup_abi_so PROPERTIES LINKER_LANGUAGE CXX OUTPUT_NAME wireup_abi
  SOVERSION ${PROJECT_VERSION_MAJOR} LINK_DEPENDS ${PROJECT_SOURCE_DIR}/abi/libwireup.map)
target_link_options(wireup_abi_so PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/abi/libwireup.map)
target_link_libraries(wireup_abi_so PRIVATE PkgConfig::IBVERBS PkgConfig::RDMACM PkgConfig::HWLOC
  PkgConfig::TOMLPP PkgConfig::SODIUM Threads::Threads)
# libabigail reads the ABI from the objects' DWARF types, so the shipped layers keep full debug
# info even in a build that keeps only line tables for the rest (scripts/test.sh does, to
# halve the compile of the tests and tools).
foreach(l IN LISTS WIREUP_SHIPPED_LAYERS)
  get_target_property(type ${l} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    target_compile_options(${l} PRIVATE $<$<CONFIG:RelWithDebInfo,Debug>:-g>)
  endif()
endforeach()
