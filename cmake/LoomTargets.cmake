# SPDX-License-Identifier: Apache-2.0
# Helpers that give every Loom library and test the same flags and include layout.

function(loom_set_flags target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(LOOM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(LOOM_COMPACT_DEBUG_INFO)
    target_compile_options(${target} PRIVATE -gsplit-dwarf)
    if(LOOM_LINKER_COMPRESSES_ZSTD)
      target_link_options(${target} PRIVATE -Wl,--compress-debug-sections=zstd)
    endif()
  endif()
  if(LOOM_ASAN)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
  if(LOOM_LIBFUZZER)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link,address,undefined
      -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
  if(LOOM_TSAN)
    target_compile_options(${target} PRIVATE -fsanitize=thread -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=thread)
  endif()
endfunction()

# fmt as the libraries link it: libfmt by default; compiled into them (fmt's header-only mode) with
# LOOM_FMT_HEADER_ONLY=ON, so that what is built from them needs no libfmt at run time (the Python
# wheel sets it, pyproject.toml). Only the libraries change: the CLI, benchmarks and tests keep
# libfmt.
option(LOOM_FMT_HEADER_ONLY "Compile fmt into Loom's libraries instead of linking libfmt" OFF)
if(LOOM_FMT_HEADER_ONLY AND NOT TARGET fmt::fmt-header-only)
  message(FATAL_ERROR "LOOM_FMT_HEADER_ONLY=ON needs fmt's fmt::fmt-header-only target, which "
    "the fmt found (${fmt_DIR}) does not define")
endif()

# loom_add_library(<layer> SOURCES a.cpp b.cpp DEPS loom_x loom_y)
# Creates the library loom_<layer> (static, or shared with BUILD_SHARED_LIBS); public headers live
# in include/loom/<layer>/.
# Consumers name it loom::<layer>: an alias in the build tree (add_subdirectory) and the exported
# name once installed (find_package), so one spelling works both ways. C++20 is a usage
# requirement, since the public headers need it.
function(loom_add_library layer)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  if(LOOM_FMT_HEADER_ONLY)
    list(TRANSFORM ARG_PRIVATE_DEPS REPLACE "^fmt::fmt$" "fmt::fmt-header-only")
  endif()
  add_library(loom_${layer} ${ARG_SOURCES})
  add_library(loom::${layer} ALIAS loom_${layer})
  set_target_properties(loom_${layer} PROPERTIES EXPORT_NAME ${layer})
  target_include_directories(loom_${layer}
    PUBLIC
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${PROJECT_SOURCE_DIR}/csrc)
  target_compile_features(loom_${layer} PUBLIC cxx_std_20)
  target_link_libraries(loom_${layer} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  loom_set_flags(loom_${layer})
  set_property(GLOBAL APPEND PROPERTY LOOM_LIBRARIES loom_${layer})
endfunction()

# loom::loom (target loom_all, since `loom` is the CLI): every library, for a framework that wants
# the whole public API (include/loom/loom.h) without picking layers. Call after the last library.
# In the build tree it alone carries the generated include/ (loom/version.h): on the libraries it
# would change every compile command for a header no library source includes. Installed, every
# target has it, since both trees are one include/ there.
function(loom_add_umbrella_target)
  get_property(libs GLOBAL PROPERTY LOOM_LIBRARIES)
  # Each library's direct Loom dependencies, one line "lib: dep dep ...", for the layering test
  # (tests/layering): it checks every include against them.
  set(lines "")
  foreach(lib IN LISTS libs)
    get_target_property(link ${lib} LINK_LIBRARIES)
    set(deps "")
    if(link)
      foreach(dep IN LISTS link)
        if(dep MATCHES "^loom_")
          list(APPEND deps ${dep})
        endif()
      endforeach()
    endif()
    list(JOIN deps " " deps)
    string(APPEND lines "${lib}: ${deps}\n")
  endforeach()
  set(LOOM_LIBRARY_DEPS_FILE ${PROJECT_BINARY_DIR}/loom_library_deps.txt CACHE INTERNAL "")
  file(WRITE ${LOOM_LIBRARY_DEPS_FILE} "${lines}")
  add_library(loom_all INTERFACE)
  add_library(loom::loom ALIAS loom_all)
  set_target_properties(loom_all PROPERTIES EXPORT_NAME loom)
  target_include_directories(loom_all INTERFACE
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(loom_all INTERFACE ${libs})
endfunction()

# The environment of every ctest test: the source tree, and LOOM_DEBUG turning on the verifiers
# (kernel IR after every lowering pass, the IR after every scheduler) so that any test lowering or
# scheduling a fusion also checks the passes' and schedulers' output. Tests registered with
# add_test directly set it too:
#   set_tests_properties(t PROPERTIES ENVIRONMENT "${LOOM_TEST_ENVIRONMENT}")
set(LOOM_TEST_ENVIRONMENT
  "LOOM_SOURCE_DIR=${PROJECT_SOURCE_DIR}" "LOOM_DEBUG=verify_kernel_ir,verify_ir")

# loom_add_test(<name> LABEL unit [more labels] SOURCES ... DEPS ...)
# One GoogleTest executable registered as one ctest test with the given label and
# LOOM_TEST_ENVIRONMENT.
function(loom_add_test name)
  cmake_parse_arguments(ARG "" "" "LABEL;SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/csrc)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest GTest::gtest_main)
  loom_set_flags(${name})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABEL}"
    ENVIRONMENT "${LOOM_TEST_ENVIRONMENT}")
endfunction()
