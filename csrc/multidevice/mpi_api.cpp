// SPDX-License-Identifier: Apache-2.0
// MPI opened at run time (mpi_api.h): OpenMPI's libmpi with dlopen, its functions and predefined
// handles looked up once per process.
#include "multidevice/mpi_api.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <vector>

#include "loom/support/error.h"
#include "loom/support/strings.h"

// The build compiles against OpenMPI's mpi.h (csrc/multidevice/CMakeLists.txt checks it): the
// handles' names below are OpenMPI's.
static_assert(OMPI_MAJOR_VERSION >= 3, "Loom loads OpenMPI 3 or newer at run time");

namespace loom::multidevice::detail {
namespace {

using ::loom::detail::concat;

struct State {
  void* handle = nullptr;
  MpiApi api;
  std::string reason;  // why MPI is unusable; empty when usable
};

// A symbol as the opened library's own code sees it. With the library in the global scope
// (RTLD_GLOBAL, or linked by the program) that is the process's first definition: a program that
// links libmpi and names MPI_COMM_WORLD holds a copy of ompi_mpi_comm_world (a copy relocation),
// which libmpi then uses instead of its own, so dlsym on the library's handle would give an
// object nobody initializes. The library must define the symbol itself either way (a library
// that is not libmpi is refused even when the program has MPI of its own).
void* lookup(void* handle, const char* name, bool global) {
  void* own = dlsym(handle, name);
  if (own == nullptr || !global) return own;
  void* first = dlsym(RTLD_DEFAULT, name);
  return first != nullptr ? first : own;
}

// Never throws: every failure becomes `reason`. The library stays open for the process's life
// (MPI may be finalized as late as the exit handlers).
//
// RTLD_GLOBAL: OpenMPI opens its own components (mca_*.so) later, and they resolve symbols of
// libmpi's family through the global scope, as they would had the program linked libmpi.
std::unique_ptr<State> open(const char* library, int scope = RTLD_GLOBAL) {
  auto state = std::make_unique<State>();
  dlerror();
  state->handle = dlopen(library, RTLD_NOW | scope);
  if (state->handle == nullptr) {
    // The loader's text usually begins with the name, but not always (a name refused by an audit
    // module, LD_AUDIT): the reason names the library either way.
    const char* text = dlerror();
    const std::string err = text != nullptr ? text : "not found";
    const std::string prefix = concat(library, ": ");
    state->reason = err.starts_with(prefix) ? err : prefix + err;
    return state;
  }
  const bool global = scope == RTLD_GLOBAL;
  std::vector<std::string> missing;
#define LOOM_MPI_LOOKUP_FUNCTION(name)                                      \
  state->api.name = reinterpret_cast<std::add_pointer_t<decltype(::name)>>( \
      lookup(state->handle, #name, global));                                \
  if (state->api.name == nullptr) missing.emplace_back(#name);
  LOOM_MPI_FUNCTIONS(LOOM_MPI_LOOKUP_FUNCTION)
#undef LOOM_MPI_LOOKUP_FUNCTION
#define LOOM_MPI_LOOKUP_HANDLE(field, type, symbol)                             \
  state->api.field = static_cast<type>(lookup(state->handle, #symbol, global)); \
  if (state->api.field == nullptr) missing.emplace_back(#symbol);
  LOOM_MPI_HANDLES(LOOM_MPI_LOOKUP_HANDLE)
#undef LOOM_MPI_LOOKUP_HANDLE
  if (!missing.empty()) {
    state->reason = concat(library, " is not OpenMPI's libmpi (it lacks ", join(missing, ", "),
                           "); this Loom was built against OpenMPI ", OMPI_MAJOR_VERSION, ".",
                           OMPI_MINOR_VERSION, "'s mpi.h and loads OpenMPI 3 or newer");
  }
  return state;
}

// `chosen` (LOOM_MPI_LIBRARY; null or empty when unset) alone, else the first of `defaults` that
// is usable; the reason says what was tried and how to fix it.
std::unique_ptr<State> openFirst(const char* chosen, const std::vector<std::string>& defaults,
                                 int scope) {
  if (chosen != nullptr && *chosen != '\0') {
    std::unique_ptr<State> state = open(chosen, scope);
    if (!state->reason.empty()) {
      state->reason = concat("LOOM_MPI_LIBRARY=", chosen, " cannot be used: ", state->reason,
                             " (set LOOM_MPI_LIBRARY to the path of OpenMPI's libmpi.so.40, or "
                             "unset it to search the loader's path)");
    }
    return state;
  }
  std::vector<std::string> tried;
  for (const std::string& name : defaults) {
    std::unique_ptr<State> state = open(name.c_str(), scope);
    if (state->reason.empty()) return state;
    tried.push_back(state->reason);
  }
  auto state = std::make_unique<State>();
  state->reason = concat("no MPI library could be loaded (", join(tried, "; "),
                         "): install OpenMPI's runtime (libopenmpi3 on Debian and Ubuntu, "
                         "openmpi on Fedora) or set LOOM_MPI_LIBRARY to the path of its "
                         "libmpi.so.40");
  return state;
}

// Set once processMpi() has opened a usable library (read by the exit paths without opening).
std::atomic<const MpiApi*> opened{nullptr};

const State& processMpi() {
  static const std::unique_ptr<State> state = [] {
    std::unique_ptr<State> s =
        openFirst(std::getenv("LOOM_MPI_LIBRARY"), defaultMpiLibraries(), RTLD_GLOBAL);
    if (s->reason.empty()) opened.store(&s->api, std::memory_order_release);
    return s;
  }();
  return *state;
}

}  // namespace

std::vector<std::string> defaultMpiLibraries() {
  std::vector<std::string> names = {"libmpi.so.40", "libmpi.so"};
  const std::string built = LOOM_MPI_BUILD_LIBRARY;
  if (!built.empty()) names.push_back(built);
  return names;
}

const std::string& mpiLoadFailure() noexcept { return processMpi().reason; }

const MpiApi& mpi() {
  const State& state = processMpi();
  LOOM_ASSERT(state.reason.empty(), "MPI used before its library was found usable: ", state.reason);
  return state.api;
}

const MpiApi* mpiIfOpen() noexcept { return opened.load(std::memory_order_acquire); }

std::string probeMpiLibraries(const char* chosen,
                              const std::vector<std::string>& defaults) noexcept {
  try {
    return openFirst(chosen, defaults, RTLD_LOCAL)->reason;
  } catch (...) {
    return "probing MPI failed";
  }
}

}  // namespace loom::multidevice::detail
