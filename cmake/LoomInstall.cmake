# SPDX-License-Identifier: Apache-2.0
# Install rules: the libraries, the public headers, the CMake package (find_package(Loom) with the
# loom:: targets) and a pkg-config file, all relocatable: nothing installed names the build tree,
# the source tree or the install prefix chosen at configure time, so `cmake --install build
# --prefix DIR` works for any DIR (tests/packaging does exactly that).
#
# The libraries are static, as in the build tree. A static library's private dependencies still
# reach the final link, so the package finds them for its consumer: fmt (unless compiled in),
# Boost.Context when the host fibers use it, and libdl (a plain -ldl). MPI is not among them: it is
# opened at run time (docs/multidevice.md, "How MPI is found"). The host and CUDA backends need no installed data: their runtime headers are
# compiled into the libraries as strings (csrc/backend/CMakeLists.txt, csrc/codegen/CMakeLists.txt).
include(CMakePackageConfigHelpers)

set(LOOM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Loom)
get_property(LOOM_LIBRARY_TARGETS GLOBAL PROPERTY LOOM_LIBRARIES)

install(TARGETS ${LOOM_LIBRARY_TARGETS} loom_all EXPORT LoomTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/loom DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/loom/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/loom)
install(EXPORT LoomTargets NAMESPACE loom:: FILE LoomTargets.cmake DESTINATION ${LOOM_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/LoomConfig.cmake.in
  ${PROJECT_BINARY_DIR}/LoomConfig.cmake INSTALL_DESTINATION ${LOOM_CMAKE_DIR})
# Before 1.0 a minor version may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/LoomConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/LoomConfig.cmake ${PROJECT_BINARY_DIR}/LoomConfigVersion.cmake
  DESTINATION ${LOOM_CMAKE_DIR})

# loom.pc. Static libraries must come on the link line after everything that uses them, so the
# libraries are listed dependents first: a depth-first walk of LINK_LIBRARIES from loom_all.
function(loom_visit_links target)
  get_property(seen GLOBAL PROPERTY LOOM_PC_SEEN)
  if(target IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY LOOM_PC_SEEN ${target})
  get_target_property(deps ${target} LINK_LIBRARIES)
  if(deps)
    foreach(dep IN LISTS deps)
      if(TARGET ${dep} AND dep MATCHES "^loom_")
        loom_visit_links(${dep})
      elseif(NOT dep IN_LIST seen)
        set_property(GLOBAL APPEND PROPERTY LOOM_PC_SYSTEM ${dep})
      endif()
    endforeach()
  endif()
  set_property(GLOBAL APPEND PROPERTY LOOM_PC_POSTORDER ${target})
endfunction()
foreach(lib IN LISTS LOOM_LIBRARY_TARGETS)
  loom_visit_links(${lib})
endforeach()
get_property(postorder GLOBAL PROPERTY LOOM_PC_POSTORDER)
get_property(system_libs GLOBAL PROPERTY LOOM_PC_SYSTEM)
list(REVERSE postorder)
list(REMOVE_DUPLICATES system_libs)
set(LOOM_PC_LIBS "")
set(LOOM_PC_REQUIRES "")
foreach(lib IN LISTS postorder)
  string(APPEND LOOM_PC_LIBS " -l${lib}")
endforeach()
foreach(dep IN LISTS system_libs)
  if(dep STREQUAL "fmt::fmt")
    # fmt installs fmt.pc: required by name, so pkg-config adds its flags and library.
    list(APPEND LOOM_PC_REQUIRES fmt)
  elseif(dep STREQUAL "fmt::fmt-header-only")
    # LOOM_FMT_HEADER_ONLY: fmt is compiled into the libraries; the consumer links nothing.
  elseif(dep STREQUAL "Boost::context")
    # Boost installs no pkg-config file: the library by name, with its directory unless the
    # compiler searches that anyway.
    # The fiber choice in CMakeLists.txt made sure the target exists; its file may still be
    # unknown (an interface-only target): then the compiler's search path must find it.
    get_target_property(boost_context_file Boost::context LOCATION)
    if(boost_context_file)
      get_filename_component(boost_context_dir "${boost_context_file}" DIRECTORY)
      if(NOT boost_context_dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
        string(APPEND LOOM_PC_LIBS " -L${boost_context_dir}")
      endif()
    endif()
    string(APPEND LOOM_PC_LIBS " -lboost_context")
  elseif(TARGET ${dep})
    message(FATAL_ERROR "loom.pc: no pkg-config spelling for the link dependency ${dep}")
  else()
    string(APPEND LOOM_PC_LIBS " -l${dep}")
  endif()
endforeach()
list(JOIN LOOM_PC_REQUIRES ", " LOOM_PC_REQUIRES)
set(LOOM_PC_CFLAGS "")
foreach(lib IN LISTS LOOM_LIBRARY_TARGETS)
  get_target_property(defs ${lib} INTERFACE_COMPILE_DEFINITIONS)
  if(defs)
    foreach(def IN LISTS defs)
      string(APPEND LOOM_PC_CFLAGS " -D${def}")
    endforeach()
  endif()
endforeach()
# The prefix relative to the .pc file, so the file stays right wherever the tree is installed.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  message(FATAL_ERROR "loom.pc needs a relative CMAKE_INSTALL_LIBDIR, got ${CMAKE_INSTALL_LIBDIR}")
endif()
file(RELATIVE_PATH LOOM_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" LOOM_PC_TO_PREFIX "${LOOM_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/loom.pc.in ${PROJECT_BINARY_DIR}/loom.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/loom.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
