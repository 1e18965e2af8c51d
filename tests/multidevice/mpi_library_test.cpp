// SPDX-License-Identifier: Apache-2.0
// MPI is opened at run time (csrc/multidevice/mpi_api.h), only by a process that communicates
// between ranks: single-rank runs never load libmpi, and a library that cannot be opened is a
// UserError that names what was tried and LOOM_MPI_LIBRARY. Each case runs in a fresh process
// (a death test re-executing this binary), since the process opens MPI once.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "loom/multidevice/communicator.h"
#include "user_error_of.h"

namespace loom::multidevice {
namespace {

using test::userErrorOf;

// True when a libmpi is mapped into this process.
bool libmpiLoaded() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/libmpi.so") != std::string::npos) return true;
  }
  return false;
}

Tensor ones(int64_t n) {
  Tensor t = Tensor::empty({n}, DataType::Float32);
  t.fill(1.0);
  return t;
}

class MpiLibrary : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// Every collective a single rank can make, on the launcher's view and on an explicit world of
// one, and on a team of one in a world of two: none loads MPI. Asking whether MPI is there (a
// world of several ranks) loads it, and nothing more.
TEST_F(MpiLibrary, SingleRankRunsNeverLoadMpi) {
  EXPECT_EXIT(
      {
        ::unsetenv("OMPI_COMM_WORLD_RANK");
        ::unsetenv("OMPI_COMM_WORLD_SIZE");
        ::unsetenv("RANK");
        ::unsetenv("WORLD_SIZE");
        Communicator launcher;
        Communicator one(0, 1, 0, 1);
        for (Communicator* c : {&launcher, &one}) {
          c->barrier();
          std::cerr << "allgather " << c->allgather(7)[0] << " " << c->allgatherBytes("x").size()
                    << "\n";
          Tensor x = ones(4);
          c->allreduce(x, ReduceOp::Sum, {0});
        }
        Communicator two(1, 2, 1, 2);
        Tensor x = ones(4);
        two.allreduce(x, ReduceOp::Sum, {1});
        std::cerr << "transport " << transportName(two.lastTransport()) << ", sum "
                  << x.dataAs<float>()[0] << "\n";
        std::cerr << "libmpi after single-rank runs: " << (libmpiLoaded() ? "loaded" : "absent")
                  << "\n";
        std::cerr << "hasMpi " << Communicator::hasMpi()
                  << ", libmpi: " << (libmpiLoaded() ? "loaded" : "absent") << "\n";
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "allgather 7 1\nallgather 7 1\ntransport local, sum 1\n"
      "libmpi after single-rank runs: absent\nhasMpi 1, libmpi: loaded\n");
}

// LOOM_MPI_LIBRARY naming a file that is not there: several ranks are refused with the file, the
// loader's reason and the fix; a team of one still runs.
TEST_F(MpiLibrary, MissingLibraryIsAUserErrorThatSaysWhatWasTried) {
  EXPECT_EXIT(
      {
        ::setenv("LOOM_MPI_LIBRARY", "/nonexistent/libmpi.so.40", 1);
        Communicator comm(0, 2, 0, 2);
        std::cerr << "hasMpi " << Communicator::hasMpi() << "\n";
        std::cerr << userErrorOf([&] { comm.barrier(); }) << "\n";
        Tensor x = ones(4);
        std::cerr << userErrorOf([&] { comm.allreduce(x, ReduceOp::Sum, {0, 1}); }) << "\n";
        comm.allreduce(x, ReduceOp::Sum, {0});
        std::cerr << "transport " << transportName(comm.lastTransport()) << "\n";
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "hasMpi 0\n[^\n]*: a barrier between 2 ranks needs MPI, and "
      "LOOM_MPI_LIBRARY=/nonexistent/libmpi.so.40 "
      "cannot be used: /nonexistent/libmpi.so.40: cannot open shared object file: No such file "
      "or directory \\(set LOOM_MPI_LIBRARY to the path of OpenMPI's libmpi.so.40, or unset it "
      "to search the loader's path\\)\n[^\n]*: allreduce between 2 ranks needs MPI, and "
      "LOOM_MPI_LIBRARY=/nonexistent/libmpi.so.40 "
      "cannot be used: [^\n]*\n"
      "transport local\n");
}

// Under a launcher of two ranks without a usable MPI the communicator still comes up (every
// rank's local program runs), and its first collective says why there is no MPI.
TEST_F(MpiLibrary, LauncherOfSeveralRanksWithoutMpiLibrary) {
  EXPECT_EXIT(
      {
        ::setenv("LOOM_MPI_LIBRARY", "/nonexistent/libmpi.so.40", 1);
        ::unsetenv("OMPI_COMM_WORLD_RANK");
        ::unsetenv("OMPI_COMM_WORLD_SIZE");
        ::setenv("RANK", "1", 1);
        ::setenv("WORLD_SIZE", "2", 1);
        Communicator& comm = Communicator::instance();
        std::cerr << "rank " << comm.rank() << " of " << comm.size() << "\n";
        std::cerr << userErrorOf([&] { comm.allgather(int64_t(3)); }) << "\n";
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "rank 1 of 2\n[^\n]*: an allgather between 2 ranks needs MPI, and "
      "LOOM_MPI_LIBRARY=/nonexistent/libmpi.so.40 cannot be used: ");
}

}  // namespace
}  // namespace loom::multidevice
