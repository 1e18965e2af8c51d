// SPDX-License-Identifier: Apache-2.0
// The registry of environment variables (env_vars.h).
#include "loom/support/env_vars.h"

#include <array>

namespace loom {
namespace {

constexpr std::array kEnvVars = {
    EnvVar{"LOOM_DUMP", "name,name(arg),...",
           "prints what each name says to the dump sink (std::cout by default); names below; "
           "help lists them"},
    EnvVar{"LOOM_DEBUG", "name,...",
           "extra checks that cost compile time; names below; help lists them"},
    EnvVar{"LOOM_DISABLE", "pass,...",
           "optional lowering or pre-segmentation passes not to run (loom --help lists them)"},
    EnvVar{"LOOM_BACKEND", "host|cuda",
           "where kernels run when the program does not say: unset picks cuda when a GPU is seen"},
    EnvVar{"LOOM_CACHE_DIR", "DIR",
           "root of the compiled-kernel caches (default $XDG_CACHE_HOME/loom, ~/.cache/loom)"},
    EnvVar{"LOOM_PLAN_CACHE", "0|1|force",
           "0: off; default on (a warm start runs a stored plan); force: on under LOOM_DEBUG too"},
    EnvVar{"LOOM_PLAN_CACHE_DIR", "DIR",
           "where the plan cache lives (default LOOM_CACHE_DIR/plans)"},
    EnvVar{"LOOM_CACHE_LOCK_TIMEOUT", "SECONDS",
           "how long a host kernel-cache install waits for the cache's lock (default 30)"},
    EnvVar{
        "LOOM_HOST_CXX", "COMMAND",
        "the C++ compiler the host backend builds kernels with, e.g. 'ccache g++' (default c++)"},
    EnvVar{"LOOM_HOST_CXXFLAGS", "FLAGS", "extra flags appended to the host backend's compiler"},
    EnvVar{"LOOM_NVRTC_LIBRARY", "PATH", "the NVRTC library to load before the usual names"},
    EnvVar{"LOOM_NVRTC_OPTIONS", "OPTIONS", "extra NVRTC options, separated by spaces"},
    EnvVar{"LOOM_NVRTC_FAST_COMPILE", "0|min|mid|max",
           "NVRTC's fast-compile level (CUDA 13 and newer); overrides CompileOptions::fastCompile"},
    EnvVar{"LOOM_NCCL_LIBRARY", "PATH", "the NCCL library GPU ranks load (default libnccl.so.2)"},
    EnvVar{"LOOM_CUBLASLT_LIBRARY", "PATH",
           "the cuBLASLt library matmul and linear load on a GPU, before the usual names"},
    EnvVar{"LOOM_MPI_LIBRARY", "PATH",
           "OpenMPI's libmpi that ranks load (default libmpi.so.40, then libmpi.so)"},
    EnvVar{
        "LOOM_COMM_TIMEOUT", "SECONDS",
        "how long a collective may wait for its peers before the job ends (default 600; 0: none)"},
    EnvVar{"CUDA_HOME", "DIR", "where NVRTC is also looked for (DIR/lib64), after the usual names"},
    EnvVar{"CUDA_PATH", "DIR", "as CUDA_HOME, looked at after it"},
    EnvVar{"PATH", "DIRS",
           "where the host compiler is found (its file's stamp keys the kernel cache)"},
    EnvVar{"LD_LIBRARY_PATH", "DIRS",
           "where libnvrtc may be loaded from (part of the NVRTC identity the cubin cache keys)"},
    EnvVar{"XDG_CACHE_HOME", "DIR", "the cache root is DIR/loom when LOOM_CACHE_DIR is unset"},
    EnvVar{"HOME", "DIR", "the cache root is DIR/.cache/loom when neither of the above is set"},
    EnvVar{"OMPI_COMM_WORLD_RANK", "N", "this process's rank, set by OpenMPI's mpirun"},
    EnvVar{"OMPI_COMM_WORLD_SIZE", "N", "the number of ranks, set by OpenMPI's mpirun"},
    EnvVar{"OMPI_COMM_WORLD_LOCAL_RANK", "N",
           "the rank on this host (picks the GPU of a rank), set by OpenMPI's mpirun"},
    EnvVar{"OMPI_COMM_WORLD_LOCAL_SIZE", "N", "the ranks on this host, set by OpenMPI's mpirun"},
    EnvVar{"RANK", "N", "this process's rank under torchrun-style launchers (without OpenMPI's)"},
    EnvVar{"WORLD_SIZE", "N", "the number of ranks under torchrun-style launchers"},
    EnvVar{"LOCAL_RANK", "N", "the rank on this host under torchrun-style launchers"},
    EnvVar{"LOCAL_WORLD_SIZE", "N", "the ranks on this host under torchrun-style launchers"},
};

}  // namespace

std::span<const EnvVar> environmentVariables() { return kEnvVars; }

const EnvVar* findEnvironmentVariable(std::string_view name) {
  for (const EnvVar& v : kEnvVars) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

}  // namespace loom
