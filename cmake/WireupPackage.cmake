# libwireup.a and what `cmake --install` puts beside it: the public headers, the CMake package
# (find_package(wireup CONFIG) -> wireup::wireup) and wireup.pc. Included from src/CMakeLists.txt
# once WIREUP_SHIPPED_LAYERS is set.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Every shipped layer may link only shipped layers (or imported dependencies): whatever it
# links must be in the archive. This is what keeps the simulator out of libwireup.a.
foreach(layer IN LISTS WIREUP_SHIPPED_LAYERS)
  get_target_property(links ${layer} LINK_LIBRARIES)
  foreach(l IN LISTS links)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" l "${l}")
    if(TARGET ${l})
      get_target_property(imported ${l} IMPORTED)
      if(NOT imported AND NOT l IN_LIST WIREUP_SHIPPED_LAYERS)
        message(FATAL_ERROR "${layer} links ${l}, which is not in libwireup.a (WIREUP_SHIPPED_LAYERS)")
      endif()
    endif()
  endforeach()
endforeach()

set(objs "")
foreach(l IN LISTS WIREUP_SHIPPED_LAYERS)
  get_target_property(type ${l} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    list(APPEND objs $<TARGET_OBJECTS:${l}>)
  endif()
endforeach()
add_library(wireup STATIC ${objs})
include(${PROJECT_SOURCE_DIR}/cmake/WireupAbi.cmake)
add_library(wireup::wireup ALIAS wireup)
set_target_properties(wireup PROPERTIES LINKER_LANGUAGE CXX EXPORT_NAME wireup)
target_include_directories(wireup INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# The public headers include nothing of these: the consumer links them, never compiles with them.
target_link_libraries(wireup PRIVATE PkgConfig::IBVERBS PkgConfig::RDMACM PkgConfig::HWLOC
  PkgConfig::TOMLPP PkgConfig::SODIUM Threads::Threads)

# An instrumented archive (WIREUP_SANITIZE) needs the sanitizer runtimes in whatever links it.
set(WIREUP_PC_SANITIZE "")
if(WIREUP_SANITIZE)
  target_link_options(wireup INTERFACE -fsanitize=address,undefined)
  set(WIREUP_PC_SANITIZE " -fsanitize=address,undefined")
endif()

# Component Development: what a transport needs to build against wireup (the tools are
# component Runtime). `cmake --install` installs both; tests/install takes Development alone.
install(TARGETS wireup EXPORT wireupTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/wireup DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT Development)
install(FILES ${PROJECT_BINARY_DIR}/include/wireup/wireup_version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/wireup
  COMPONENT Development)

set(WIREUP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/wireup)
install(EXPORT wireupTargets NAMESPACE wireup:: DESTINATION ${WIREUP_CMAKE_DIR} COMPONENT Development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/wireupConfig.cmake.in
  ${PROJECT_BINARY_DIR}/wireupConfig.cmake INSTALL_DESTINATION ${WIREUP_CMAKE_DIR})
# SameMajorVersion: notes/abi.md's rule (a minor bump only adds; the major moves on a break),
# so a consumer asking for 0.1 takes 0.2 (CMake compares 0.x the same way: major 0 = 0).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/wireupConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/wireupConfig.cmake ${PROJECT_BINARY_DIR}/wireupConfigVersion.cmake
  DESTINATION ${WIREUP_CMAKE_DIR} COMPONENT Development)

# pkg-config: `pkg-config --static --libs wireup` for C consumers of the static archive.
string(REGEX REPLACE "[^/]+" ".." WIREUP_PC_UP "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file(${PROJECT_SOURCE_DIR}/cmake/wireup.pc.in ${PROJECT_BINARY_DIR}/wireup.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/wireup.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT Development)
