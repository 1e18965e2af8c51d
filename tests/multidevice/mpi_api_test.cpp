// SPDX-License-Identifier: Apache-2.0
// The table of MPI opened at run time (csrc/multidevice/mpi_api.h) against OpenMPI's mpi.h:
// this binary links libmpi and names the predefined handles as a program would, so each handle
// Loom looked up must be the very object the header's macro names (a wrong symbol name, or the
// library's own copy of an object the program relocated into itself, shows here). Also the text
// of a library that cannot be used. MPI is opened, not initialized.
#include "multidevice/mpi_api.h"

#include <gtest/gtest.h>

#include <string>

namespace loom::multidevice::detail {
namespace {

void expectHas(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "expected \"" << part << "\" in: " << msg;
}

TEST(MpiApi, HandlesAreTheHeadersObjects) {
  ASSERT_EQ(mpiLoadFailure(), "");
  const MpiApi& m = mpi();
  EXPECT_EQ(m.commWorld, MPI_COMM_WORLD);
  EXPECT_EQ(m.commSelf, MPI_COMM_SELF);
  EXPECT_EQ(m.commNull, MPI_COMM_NULL);
  EXPECT_EQ(m.groupNull, MPI_GROUP_NULL);
  EXPECT_EQ(m.requestNull, MPI_REQUEST_NULL);
  EXPECT_EQ(m.errorsReturn, MPI_ERRORS_RETURN);
  EXPECT_EQ(m.byteType, MPI_BYTE);
  EXPECT_EQ(m.charType, MPI_CHAR);
  EXPECT_EQ(m.intType, MPI_INT);
  EXPECT_EQ(m.boolType, MPI_C_BOOL);
  EXPECT_EQ(m.uint16Type, MPI_UINT16_T);
  EXPECT_EQ(m.int32Type, MPI_INT32_T);
  EXPECT_EQ(m.int64Type, MPI_INT64_T);
  EXPECT_EQ(m.floatType, MPI_FLOAT);
  EXPECT_EQ(m.doubleType, MPI_DOUBLE);
  EXPECT_EQ(m.opSum, MPI_SUM);
  EXPECT_EQ(m.opProd, MPI_PROD);
  EXPECT_EQ(m.opMax, MPI_MAX);
  EXPECT_EQ(m.opMin, MPI_MIN);
  EXPECT_EQ(m.opLor, MPI_LOR);
  EXPECT_EQ(m.opLand, MPI_LAND);
  EXPECT_EQ(mpiIfOpen(), &m);
  // The library answers through the table without being initialized.
  int initialized = 1;
  EXPECT_EQ(m.MPI_Initialized(&initialized), MPI_SUCCESS);
  EXPECT_EQ(initialized, 0);
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  EXPECT_EQ(m.MPI_Get_library_version(version, &len), MPI_SUCCESS);
  expectHas(std::string(version, size_t(len)), "Open MPI");
}

TEST(MpiApi, DefaultNamesComeFirstThenTheBuildsLibrary) {
  const std::vector<std::string> names = defaultMpiLibraries();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "libmpi.so.40");
  EXPECT_EQ(names[1], "libmpi.so");
  EXPECT_EQ(probeMpiLibraries(nullptr, names), "");
}

TEST(MpiApi, UnusableLibrariesSayWhatWasTriedAndHowToFixIt) {
  const std::string missing = probeMpiLibraries(nullptr, {"libloom-no-mpi-a.so", "/no/libmpi.so"});
  expectHas(missing,
            "no MPI library could be loaded (libloom-no-mpi-a.so: cannot open shared "
            "object file: No such file or directory; /no/libmpi.so: cannot open shared "
            "object file: No such file or directory): install OpenMPI's runtime");
  expectHas(missing, "or set LOOM_MPI_LIBRARY to the path of its libmpi.so.40");
  // LOOM_MPI_LIBRARY is the only library tried when set.
  const std::string chosen = probeMpiLibraries("/no/libmpi.so.40", {"libmpi.so.40"});
  expectHas(chosen,
            "LOOM_MPI_LIBRARY=/no/libmpi.so.40 cannot be used: /no/libmpi.so.40: cannot "
            "open shared object file");
  // A library that is not OpenMPI's libmpi.
  const std::string other = probeMpiLibraries("libm.so.6", {});
  expectHas(other,
            "LOOM_MPI_LIBRARY=libm.so.6 cannot be used: libm.so.6 is not OpenMPI's libmpi "
            "(it lacks MPI_Init_thread, MPI_Initialized, ");
  expectHas(other, "ompi_mpi_comm_world, ");
  expectHas(other, "'s mpi.h and loads OpenMPI 3 or newer");
}

}  // namespace
}  // namespace loom::multidevice::detail
