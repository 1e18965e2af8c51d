# SPDX-License-Identifier: Apache-2.0
# CLI11 (header only) for the loom command line and the benchmark binaries: the package's CMake
# config where it is installed (Debian's libcli11-dev, tools/install-deps.sh), else the headers
# under LOOM_CLI11_INCLUDE_DIR or .deps/include, where tools/stage-deps.sh copies them for a
# machine that cannot install packages (the GPU machine: docs/testing.md, "GPU results").
# Included once from the top-level CMakeLists.txt, so tools/ and benchmarks/ both see the target.
find_package(CLI11 CONFIG QUIET)
if(NOT TARGET CLI11::CLI11)
  find_path(LOOM_CLI11_INCLUDE_DIR CLI/CLI.hpp HINTS "${PROJECT_SOURCE_DIR}/.deps/include")
  if(NOT LOOM_CLI11_INCLUDE_DIR)
    message(FATAL_ERROR "CLI11 not found: install it (tools/install-deps.sh: Debian's "
      "libcli11-dev), set LOOM_CLI11_INCLUDE_DIR to the directory holding CLI/CLI.hpp, or run "
      "tools/stage-deps.sh on a machine that has it and copy .deps/ along; or configure with "
      "-DLOOM_BUILD_TOOLS=OFF -DLOOM_BUILD_BENCHMARKS=OFF to build the libraries only")
  endif()
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE "${LOOM_CLI11_INCLUDE_DIR}")
  message(STATUS "Loom: CLI11 headers from ${LOOM_CLI11_INCLUDE_DIR}")
endif()
