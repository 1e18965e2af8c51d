#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs consumer/main.cpp the two ways a user consumes Loom (registered by
# CMakeLists.txt here; label packaging):
#   packaging_test.sh install BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX [LAUNCHER]
#     `cmake --install` of the already built BUILD_DIR into WORK_DIR/prefix, a check that nothing
#     installed names the build or source tree, then consumer/ with find_package(Loom), loom.pc
#     checked to be relocatable (no absolute path, no MPI) with -std=c++20, and consumer/main.cpp
#     once more with only `pkg-config --cflags --libs loom`, from the tree moved elsewhere.
#   packaging_test.sh subdir SOURCE_DIR WORK_DIR GENERATOR CXX [LAUNCHER]
#     subdir_consumer/, which builds Loom's libraries itself through add_subdirectory, as shared
#     libraries (unoptimized, the quickest to compile; LAUNCHER, ccache, makes a rerun cheap).
#   packaging_test.sh no-boost-context SOURCE_DIR WORK_DIR GENERATOR CXX [LAUNCHER]
#     configures SOURCE_DIR (libraries only) with Boost.Context hidden, as on a machine with Boost's
#     headers alone: configure passes, the fibers are ucontext, the package asks for no Boost;
#     and, no build type being given, it is Release without debug info.
# Build directories under WORK_DIR are kept between runs, so a rerun only rebuilds what changed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=$1
shift

# Runs the consumer as a user's program would run: outside Loom's source and test environment.
run_consumer() {
  (cd "$work" && env -u LOOM_SOURCE_DIR "$1")
}

configure() {
  local src=$1 bin=$2
  shift 2
  cmake -S "$src" -B "$bin" -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" \
    ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"} "$@" >"$bin.configure.log" 2>&1 || {
    cat "$bin.configure.log"
    return 1
  }
}

case $mode in
  install)
    build=$1 source=$2 work=$3 generator=$4 cxx=$5 launcher=${6:-}
    mkdir -p "$work"
    prefix=$work/prefix
    # A fresh prefix, so that a file the install rules stopped installing cannot linger; installed
    # files keep their timestamps, so the consumer's rebuild stays incremental.
    rm -rf "$prefix"
    cmake --install "$build" --prefix "$prefix" >"$work/install.log"
    for f in lib/cmake/Loom/LoomConfig.cmake lib/cmake/Loom/LoomConfigVersion.cmake \
      lib/cmake/Loom/LoomTargets.cmake lib/pkgconfig/loom.pc include/loom/loom.h \
      include/loom/version.h include/loom/runtime/fusion_executor_cache.h lib/libloom_runtime.a; do
      [[ -f $prefix/$f ]] || { echo "packaging: $f was not installed" >&2; exit 1; }
    done
    if grep -rlF -e "$build" -e "$source" "$prefix/lib/cmake" "$prefix/lib/pkgconfig" \
      "$prefix/include"; then
      echo "packaging: the installed files above name the build or source tree" >&2
      exit 1
    fi
    configure "$here/consumer" "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix"
    cmake --build "$work/consumer" >"$work/consumer.build.log" 2>&1 || {
      cat "$work/consumer.build.log"
      exit 1
    }
    run_consumer "$work/consumer/loom_consumer"
    # loom.pc: relocatable (the prefix found from the file's own place, every -I and -L under it:
    # nothing absolute, MPI's paths least of all), and it asks for C++20 itself.
    pc=$prefix/lib/pkgconfig/loom.pc
    grep -qx 'prefix=${pcfiledir}/../..' "$pc" || {
      echo "packaging: loom.pc's prefix is not \${pcfiledir}-relative:" >&2
      grep '^prefix=' "$pc" >&2
      exit 1
    }
    if grep -E '^(Cflags|Libs|Requires|[a-z_]*dir)' "$pc" | grep -E '(^|[ =])-?[IL]?/|mpi'; then
      echo "packaging: loom.pc names the absolute paths or the MPI above" >&2
      exit 1
    fi
    grep -q '^Cflags: -std=c++20 ' "$pc" || { echo "packaging: loom.pc lacks -std=c++20" >&2; exit 1; }
    if command -v pkg-config >/dev/null 2>&1; then
      # The installed tree moved elsewhere after installing: only its loom.pc finds it there.
      relocated=$work/relocated
      rm -rf "$relocated"
      mv "$prefix" "$relocated"
      export PKG_CONFIG_PATH=$relocated/lib/pkgconfig
      [[ $(pkg-config --variable=libdir loom) == "$relocated/lib/pkgconfig/../../lib" ]] || {
        echo "packaging: the moved loom.pc's libdir is $(pkg-config --variable=libdir loom)" >&2
        exit 1
      }
      # No -std=c++20 of our own: loom.pc's Cflags must bring it.
      # shellcheck disable=SC2046 # pkg-config prints several words on purpose
      $launcher "$cxx" $(pkg-config --cflags loom) "$here/consumer/main.cpp" \
        -o "$work/loom_consumer_pc" $(pkg-config --libs loom)
      mv "$relocated" "$prefix"
      run_consumer "$work/loom_consumer_pc"
    else
      echo "packaging: pkg-config not found, loom.pc not checked"
    fi
    ;;
  subdir)
    source=$1 work=$2 generator=$3 cxx=$4 launcher=${5:-}
    mkdir -p "$work"
    # Shared libraries here (BUILD_SHARED_LIBS), so that build is tested too; the installed
    # package above is the static default.
    configure "$here/subdir_consumer" "$work/subdir" -DLOOM_SOURCE_DIR="$source" \
      -DBUILD_SHARED_LIBS=ON
    cmake --build "$work/subdir" -j 2 >"$work/subdir.build.log" 2>&1 || {
      tail -50 "$work/subdir.build.log"
      exit 1
    }
    libs=$(ldd "$work/subdir/loom_consumer")
    if [[ $libs != *libloom_runtime.so* ]]; then
      echo "packaging: BUILD_SHARED_LIBS=ON did not link the consumer to libloom_runtime.so" >&2
      exit 1
    fi
    run_consumer "$work/subdir/loom_consumer"
    ;;
  no-boost-context)
    # A machine with Boost's headers but no compiled Boost.Context (the GPU machine): BoostConfig
    # is found, the context component is not. Configure must pass, choose the ucontext fibers, and
    # generate a package that asks for no Boost.
    source=$1 work=$2 generator=$3 cxx=$4 launcher=${5:-}
    mkdir -p "$work"
    rm -rf "$work/no_boost_context"
    configure "$source" "$work/no_boost_context" -DCMAKE_DISABLE_FIND_PACKAGE_boost_context=ON \
      -DLOOM_BUILD_TESTS=OFF -DLOOM_BUILD_BENCHMARKS=OFF -DLOOM_BUILD_TOOLS=OFF \
      -DLOOM_BUILD_PYTHON=OFF -DLOOM_INSTALL=ON
    log=$work/no_boost_context.configure.log
    grep -q 'Host backend fibers: ucontext' "$log" || {
      echo "packaging: without Boost.Context the configure did not choose ucontext:" >&2
      cat "$log" >&2
      exit 1
    }
    if grep -q -i boost "$work/no_boost_context/loom.pc" "$work/no_boost_context/LoomConfig.cmake" &&
      ! grep -q 'Loom_HOST_FIBERS ucontext' "$work/no_boost_context/LoomConfig.cmake"; then
      echo "packaging: the package of a ucontext build still asks for Boost" >&2
      exit 1
    fi
    if grep -q boost_context "$work/no_boost_context/loom.pc"; then
      echo "packaging: loom.pc of a ucontext build links boost_context" >&2
      exit 1
    fi
    # No build type given, as in a plain `cmake -S . -B build`: Release, compiled without debug
    # info, so an install carries none (the presets choose RelWithDebInfo themselves).
    grep -qx 'CMAKE_BUILD_TYPE:STRING=Release' "$work/no_boost_context/CMakeCache.txt" || {
      echo "packaging: a plain configure did not choose Release:" >&2
      grep '^CMAKE_BUILD_TYPE' "$work/no_boost_context/CMakeCache.txt" >&2
      exit 1
    }
    if grep -E '^CMAKE_CXX_FLAGS(_RELEASE)?:[A-Z]+=(.* )?-g[0-9a-z]*( |$)' \
      "$work/no_boost_context/CMakeCache.txt"; then
      echo "packaging: a plain configure compiles the lines above with debug info" >&2
      exit 1
    fi
    grep 'Host backend fibers' "$log"
    ;;
  *)
    echo "packaging_test.sh: unknown mode '$mode' (expected install, subdir or no-boost-context)" >&2
    exit 2
    ;;
esac
