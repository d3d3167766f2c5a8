# wireup_layer(<target> SOURCES <file>... [PUBLIC <target>...] [PRIVATE <target>...])
#
# Called from src/<folder>/CMakeLists.txt: that folder is one layer, one STATIC library.
#
# A layer's headers are reachable only through its own include root,
# ${CMAKE_BINARY_DIR}/layers/<target>/, which holds <folder>/<header>.h as symlinks into
# src/<folder> -- the headers of that folder only, not those of sub-folders that are layers of
# their own (provider/ does not expose provider/rdma/ or provider/sim/). src/ itself is nobody's
# include directory, so a target sees a layer's headers only if it links that layer:
#   PUBLIC  the layer's headers include the other layer's headers,
#   PRIVATE only its sources do.
# Includes keep their src/-relative spelling ("cm/connection.h"). scripts/check-layers.sh checks
# the same order on the sources themselves (ctest: layers.check).
#
# libwireup.a is not made of these libraries but of their objects (src/CMakeLists.txt).

# wireup_expose_headers(<root> <src dir> <folder>): <root>/<folder>/<h>.h -> <src dir>/<folder>/<h>.h
# for the headers directly in that folder. Rebuilt at every configure (the caller empties
# <root>) so that a removed header does not linger; CONFIGURE_DEPENDS re-runs the configure
# step when a header is added or removed.
function(wireup_expose_headers root srcdir folder)
  file(REMOVE_RECURSE ${root}/${folder})
  file(MAKE_DIRECTORY ${root}/${folder})
  file(GLOB headers CONFIGURE_DEPENDS RELATIVE ${srcdir}/${folder} ${srcdir}/${folder}/*.h)
  foreach(h IN LISTS headers)
    file(CREATE_LINK ${srcdir}/${folder}/${h} ${root}/${folder}/${h} SYMBOLIC)
  endforeach()
endfunction()

function(wireup_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  if(L_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "wireup_layer(${name}): unknown arguments ${L_UNPARSED_ARGUMENTS}")
  endif()
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
  set(root ${CMAKE_BINARY_DIR}/layers/${name})

  file(REMOVE_RECURSE ${root})
  wireup_expose_headers(${root} ${PROJECT_SOURCE_DIR}/src ${folder})

  add_library(${name} STATIC ${L_SOURCES})
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${root}>)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON WIREUP_LAYER_FOLDER ${folder})
  if(L_PUBLIC)
    target_link_libraries(${name} PUBLIC ${L_PUBLIC})
  endif()
  if(L_PRIVATE)
    target_link_libraries(${name} PRIVATE ${L_PRIVATE})
  endif()
  set_property(GLOBAL APPEND PROPERTY WIREUP_LAYERS ${name})
endfunction()
define_property(TARGET PROPERTY WIREUP_LAYER_FOLDER
  BRIEF_DOCS "src/ folder of a wireup layer" FULL_DOCS "Set by wireup_layer().")
