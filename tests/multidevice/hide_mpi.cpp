// SPDX-License-Identifier: Apache-2.0
// A loader audit module (LD_AUDIT=<this library>) under which a process runs as if no MPI were
// installed: the dynamic loader refuses every OpenMPI library (libmpi*, libopen-*), by name or
// by path, whether a program needs it or dlopen asks for it.
#include <link.h>

#include <cstdint>
#include <cstring>

extern "C" {

unsigned int la_version(unsigned int /*version*/) { return LAV_CURRENT; }

// The loader asks before each name it tries (and first for the name as given): null means "no
// such file".
char* la_objsearch(const char* name, uintptr_t* /*cookie*/, unsigned int /*flag*/) {
  const char* slash = std::strrchr(name, '/');
  const char* base = slash != nullptr ? slash + 1 : name;
  if (std::strncmp(base, "libmpi", 6) == 0 || std::strncmp(base, "libopen-", 8) == 0) {
    return nullptr;
  }
  return const_cast<char*>(name);
}

}  // extern "C"
