// SPDX-License-Identifier: Apache-2.0
// The mpi tier's resharding cases: a fusion run on every rank's shard, checked against the rank's
// shard of the reference with exactly the expected communications (mpi_test.cpp,
// mpi_tensor_parallel_test.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loom/exec/compute_device.h"
#include "loom/multidevice/communication.h"
#include "multidevice/sharded_cases.h"

namespace loom::multidevice::test {

// Resharding becomes communication. Each fusion runs on every rank's shard; the output is
// checked against the rank's shard of the double-precision reference, outputs poisoned first,
// and exactly the expected communications are issued.
struct CommunicationCase {
  std::string name;
  std::function<void(Fusion&, int64_t)> build;  // (fusion, d)
  /// The communication segments the runtime runs, in order (with two ranks or more).
  std::vector<CommunicationType> kinds;
  /// Collectives issued (a Scatter is a local copy and issues none).
  int64_t communications = 1;
  /// At -np 1 a dim of one element per device has extent 1, which the builder makes a
  /// broadcast: the reduction cases need two ranks.
  int64_t minRanks = 1;
  /// Between meshes: whether rank r (of d) takes part (runs `kinds` and issues
  /// `communications`); the others run none. Null: every rank.
  std::function<bool(int64_t r, int64_t d)> involved = nullptr;
  /// Text rank r's host program (FusionKernelRuntime::hostProgram) must contain ("" for none).
  std::function<std::string(int64_t r)> programMentions = nullptr;
  /// Global input sizes, for inputs of symbolic extents (given d); else their constant extents.
  std::function<std::vector<std::vector<int64_t>>(int64_t d)> sizes = nullptr;
  /// Elements summed into one output element, for the tolerance (0: 4 x the ranks).
  int64_t reduced = 0;
};

/// The mpi tier's backend: the host, or the GPU under LOOM_MPI_TEST_BACKEND=cuda.
exec::Backend mpiBackend();

/// Runs `c` on this rank of `comm` (d = its size): builds the fusion, runs the rank's shard of
/// random global inputs with outputs poisoned, and returns what went wrong on this rank (an
/// output against its shard of the reference, the communication segments run, the collectives
/// issued); empty when nothing did.
std::vector<std::string> runCommunicationCase(const CommunicationCase& c, Communicator& comm);

/// Every rank's failures (each rank calls it): one gtest failure per rank that had any.
void expectNoFailureOnAnyRank(const std::vector<std::string>& failures, Communicator& comm);


}  // namespace loom::multidevice::test
