// SPDX-License-Identifier: Apache-2.0
// A process on a machine without MPI: run under the audit module hide_mpi.cpp (LD_AUDIT, set by
// tests/multidevice/CMakeLists.txt), so no OpenMPI library can be loaded by any name. One rank
// runs its collectives; several ranks are refused with a UserError that lists every library
// tried (by name: the loader's text for a refused name does not give it) and says how to install
// MPI or point LOOM_MPI_LIBRARY at it.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "loom/multidevice/communicator.h"
#include "multidevice/mpi_api.h"
#include "scoped_env.h"
#include "user_error_of.h"

namespace loom::multidevice {
namespace {

using test::ScopedEnv;
using test::userErrorOf;

// What the communicator would try, each refused by the loader: else this test proves nothing.
TEST(MpiHidden, TheLoaderFindsNoLibmpiByAnyDefaultName) {
  const std::vector<std::string> names = detail::defaultMpiLibraries();
  ASSERT_GE(names.size(), 2u);
  for (const std::string& name : names) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_EQ(handle, nullptr) << name << " opened: run this test with LD_AUDIT=libloom_hide_mpi";
    if (handle != nullptr) dlclose(handle);
  }
}

TEST(MpiHidden, OneRankRunsSeveralRanksAreToldWhatWasTriedAndHowToFixIt) {
  ScopedEnv library("LOOM_MPI_LIBRARY", std::nullopt);
  ASSERT_FALSE(Communicator::hasMpi()) << "MPI loads: run this test with LD_AUDIT=libloom_hide_mpi";
  Communicator one(0, 1, 0, 1);
  one.barrier();
  EXPECT_EQ(one.allgather(int64_t(7)), std::vector<int64_t>{7});
  Tensor x = Tensor::empty({3}, DataType::Float32);
  x.fill(2.0);
  one.allreduce(x, ReduceOp::Sum, {0});
  EXPECT_EQ(x.dataAs<float>()[2], 2.0f);
  EXPECT_EQ(one.lastTransport(), Transport::Local);

  Communicator two(1, 2, 1, 2);
  // Each name with the loader's reason (whose tail, errno's text, varies), in the order tried.
  std::string tried;
  for (const std::string& name : detail::defaultMpiLibraries()) {
    std::string escaped;
    for (char c : name) escaped += c == '.' ? std::string("\\.") : std::string(1, c);
    tried += (tried.empty() ? "" : "; ") + escaped + ": cannot open shared object file[^;]*";
  }
  const std::string why = "needs MPI, and no MPI library could be loaded \\(" + tried +
                          "\\): install OpenMPI's runtime \\(libopenmpi3 on Debian and Ubuntu, "
                          "openmpi on Fedora\\) or set LOOM_MPI_LIBRARY to the path of its "
                          "libmpi\\.so\\.40$";
  EXPECT_THAT(userErrorOf([&] { two.barrier(); }),
              ::testing::ContainsRegex("a barrier between 2 ranks " + why));
  EXPECT_THAT(userErrorOf([&] {
                two.allreduce(x, ReduceOp::Sum, {0, 1});
              }),
              ::testing::ContainsRegex("allreduce between 2 ranks " + why));
  // The rank's own part still runs.
  two.allreduce(x, ReduceOp::Sum, {1});
  EXPECT_EQ(two.lastTransport(), Transport::Local);
}

}  // namespace
}  // namespace loom::multidevice
