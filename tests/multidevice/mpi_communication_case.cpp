// SPDX-License-Identifier: Apache-2.0
// runCommunicationCase (mpi_communication_case.h).
#include "multidevice/mpi_communication_case.h"

#include <cstdlib>
#include <sstream>

#include <gtest/gtest.h>

#include "loom/segmenter/presegment.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::multidevice::test {

exec::Backend mpiBackend() {
  const char* b = std::getenv("LOOM_MPI_TEST_BACKEND");
  return b != nullptr && std::string(b) == "cuda" ? exec::Backend::Cuda : exec::Backend::Host;
}

std::vector<std::string> runCommunicationCase(const CommunicationCase& c, Communicator& comm) {
  const int64_t d = comm.size();
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    c.build(*fusion, d);
  }
  std::vector<eval::Argument> global;
  for (size_t i = 0; i < fusion->inputs().size(); ++i) {
    auto* tv = fusion->inputs()[i]->as<TensorView>();
    std::vector<int64_t> sizes;
    if (c.sizes != nullptr) {
      sizes = c.sizes(d).at(i);
    } else {
      for (ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
        sizes.push_back(*id->extent()->constInt());
      }
    }
    Tensor t = Tensor::empty(sizes, tv->dtype());
    fillRandom(t, 200 + i);
    global.push_back(t);
  }
  std::vector<Tensor> expected = eval::evaluateFusion(*fusion, global);
  std::unique_ptr<Fusion> sharded = segmenter::shardedCopy(*fusion);
  const int64_t rank = comm.rank();
  // What this rank holds: tensors on a mesh it is in (it passes nothing for the others and gets
  // undefined outputs for them).
  auto holds = [&](const TensorView* tv) { return multidevice::holds(tv, rank); };
  const bool involved = c.involved == nullptr || c.involved(rank, d);
  std::vector<eval::Argument> local;
  for (size_t i = 0; i < global.size(); ++i) {
    const auto* tv = sharded->inputs()[i]->as<TensorView>();
    local.push_back(holds(tv) ? shardTensor(std::get<Tensor>(global[i]), tv, rank).contiguous()
                              : Tensor());
  }
  runtime::RuntimeOptions options;
  options.backend = mpiBackend();
  options.communicator = &comm;
  options.executor.poisonOutputs = true;
  std::vector<std::string> failures;
  const int64_t before = comm.communications();
  try {
    runtime::FusionExecutorCache cache(std::move(fusion), options);
    std::vector<Tensor> outs = cache.run(local);
    std::vector<CommunicationType> kinds;
    const runtime::FusionKernelRuntime* rt = cache.lastRuntime();
    for (int64_t seg = 0; seg < rt->numSegments(); ++seg) {
      if (const auto* ce = rt->communication(seg)) kinds.push_back(ce->communication().type);
    }
    const std::vector<CommunicationType> want_kinds =
        d > 1 && involved ? c.kinds : std::vector<CommunicationType>{};
    if (c.programMentions != nullptr) {
      const std::string text = c.programMentions(rank);
      if (rt->hostProgram().find(text) == std::string::npos) {
        failures.push_back("the host program does not mention '" + text + "':\n" +
                           rt->hostProgram());
      }
    }
    if (kinds != want_kinds) {
      std::string got_text;
      for (CommunicationType k : kinds) got_text += std::string(communicationTypeName(k)) + " ";
      failures.push_back("ran communications [" + got_text + "], not the expected ones");
    }
    for (size_t o = 0; o < outs.size(); ++o) {
      Tensor got = outs[o];
      const auto* tv = sharded->outputs()[o]->as<TensorView>();
      if (!holds(tv)) {
        if (got.defined()) {
          failures.push_back("output " + std::to_string(o) + " (" + tv->toString() +
                             ") is defined on a rank outside its mesh");
        }
        continue;
      }
#ifdef LOOM_HAVE_CUDA_BACKEND
      if (got.device().isCuda()) got = cuda::toHost(got);
#endif
      Tensor want = shardTensor(expected[o], tv, rank).contiguous();
      if (auto err = eval::expectClose(got, want, eval::defaultTolerance(want.dtype(), c.reduced > 0 ? c.reduced : 4 * d),
                                       tv->toString())) {
        failures.push_back(*err);
      }
    }
  } catch (const std::exception& e) {
    failures.push_back(std::string("rank threw: ") + e.what());
  }
  // On one rank a sharding over one device moves nothing.
  const int64_t issued = comm.communications() - before;
  const int64_t want = d > 1 && involved ? c.communications : 0;
  if (issued != want) {
    failures.push_back("issued " + std::to_string(issued) + " communications, expected " +
                       std::to_string(want));
  }
  return failures;
}

void expectNoFailureOnAnyRank(const std::vector<std::string>& failures, Communicator& comm) {
  std::ostringstream mine;
  for (const std::string& f : failures) mine << f << "\n";
  std::vector<std::string> all = comm.allgatherBytes(mine.str());
  for (size_t r = 0; r < all.size(); ++r) {
    EXPECT_TRUE(all[r].empty()) << "rank " << r << " of " << comm.size() << ":\n" << all[r];
  }
}

}  // namespace loom::multidevice::test
