// SPDX-License-Identifier: Apache-2.0
// Host tensors over the team's MPI communicator (team_transport.h), made with
// MPI_Comm_create_group (collective over the team only, so ranks outside it go on), over MPI
// loaded at run time (mpi_api.h). The communicator returns errors (MPI_ERRORS_RETURN) so that a
// failed call is a UserError with MPI's text, not an abort. Every call is a Watch (guard.h): the
// guard times it and tells the team's other guards which step this rank waits in.
#include <vector>

#include "multidevice/guard.h"
#include "multidevice/mpi_api.h"
#include "multidevice/team_transport.h"

namespace loom::multidevice {
namespace {

using detail::Channel;
using detail::checkMpi;
using detail::mpi;
using detail::MpiApi;
using detail::mpiCount;
using detail::mpiDataType;
using detail::Watch;

constexpr int kTag = 0;

class MpiTransport final : public TeamTransport {
 public:
  MpiTransport(MPI_Comm comm, Team team) : m_(mpi()), comm_(comm), team_(std::move(team)) {
    checkMpi(m_.MPI_Comm_set_errhandler(comm_, m_.errorsReturn), "MPI_Comm_set_errhandler");
    checkMpi(m_.MPI_Comm_rank(comm_, &position_), "MPI_Comm_rank");
    checkMpi(m_.MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiTransport() override {
    int finalized = 0;
    m_.MPI_Finalized(&finalized);
    if (!finalized) m_.MPI_Comm_free(&comm_);
  }
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  Transport kind() const override { return Transport::Mpi; }

  void allgather(const Tensor& input, Tensor& output, CUstream) override {
    const int n = mpiCount(input.numel(), "allgather");
    // This rank's block of the output as input: MPI spells that MPI_IN_PLACE.
    const char* mine =
        static_cast<const char*>(output.data()) + size_t(position_) * size_t(n) * input.itemSize();
    const void* send = input.data() == mine ? MPI_IN_PLACE : input.data();
    MPI_Datatype type = mpiDataType(input.dtype());
    auto watch = step("allgather");
    checkMpi(m_.MPI_Allgather(send, n, type, output.data(), n, type, comm_), "MPI_Allgather");
  }

  void allreduce(const Tensor& input, Tensor& output, ReduceOp op, CUstream) override {
    const void* send = input.data() == output.data() ? MPI_IN_PLACE : input.data();
    auto watch = step("allreduce");
    checkMpi(m_.MPI_Allreduce(send, output.data(), mpiCount(output.numel(), "allreduce"),
                              mpiDataType(output.dtype()), detail::mpiReduceOp(output.dtype(), op),
                              comm_),
             "MPI_Allreduce");
  }

  void reduceScatter(const Tensor& input, Tensor& output, ReduceOp op, CUstream) override {
    (void)mpiCount(input.numel(), "reduceScatter");
    auto watch = step("reduceScatter");
    checkMpi(m_.MPI_Reduce_scatter_block(
                 input.data(), output.data(), mpiCount(output.numel(), "reduceScatter"),
                 mpiDataType(input.dtype()), detail::mpiReduceOp(input.dtype(), op), comm_),
             "MPI_Reduce_scatter_block");
  }

  void broadcast(Tensor& buffer, int64_t root, CUstream) override {
    auto watch = step("broadcast", /*symmetric=*/false);
    checkMpi(m_.MPI_Bcast(buffer.data(), mpiCount(buffer.numel(), "broadcast"),
                          mpiDataType(buffer.dtype()), int(root), comm_),
             "MPI_Bcast");
  }

  void sendRecv(const Tensor* send, int64_t dst, Tensor* recv, int64_t src, CUstream) override {
    // MPI_PROC_NULL turns a missing half into nothing, so one call serves every pairing.
    const int sendCount = send != nullptr ? mpiCount(send->numel(), "sendRecv") : 0;
    const int recvCount = recv != nullptr ? mpiCount(recv->numel(), "sendRecv") : 0;
    MPI_Datatype sendType = send != nullptr ? mpiDataType(send->dtype()) : m_.byteType;
    MPI_Datatype recvType = recv != nullptr ? mpiDataType(recv->dtype()) : m_.byteType;
    MPI_Status status;
    auto watch = step("sendRecv", /*symmetric=*/false);
    checkMpi(m_.MPI_Sendrecv(send != nullptr ? send->data() : nullptr, sendCount, sendType,
                             send != nullptr ? int(dst) : MPI_PROC_NULL, kTag,
                             recv != nullptr ? recv->data() : nullptr, recvCount, recvType,
                             recv != nullptr ? int(src) : MPI_PROC_NULL, kTag, comm_, &status),
             "MPI_Sendrecv");
    if (recv == nullptr) return;
    int got = 0;
    checkMpi(m_.MPI_Get_count(&status, recvType, &got), "MPI_Get_count");
    LOOM_CHECK(got == recvCount, "sendRecv: received ", got, " elements from team position ", src,
               " into recv ", describe(*recv), " of ", recvCount,
               "; the sender's tensor must have the receiver's numel and dtype");
  }

  void allToAll(const Tensor& input, Tensor& output, CUstream) override {
    const int block = mpiCount(input.numel() / size_, "allToAll");
    MPI_Datatype type = mpiDataType(input.dtype());
    auto watch = step("allToAll");
    checkMpi(m_.MPI_Alltoall(input.data(), block, type, output.data(), block, type, comm_),
             "MPI_Alltoall");
  }

  // A root that takes no part has a zero count and no displacement of its own: the v-forms let
  // the root's block be missing without a sub-communicator of the other members.
  void gather(const Tensor* input, Tensor* output, int64_t root, CUstream) override {
    const Tensor& mine = input != nullptr ? *input : *output;
    MPI_Datatype type = mpiDataType(mine.dtype());
    auto watch = step("gather", /*symmetric=*/false);
    if (position_ != root) {
      checkMpi(m_.MPI_Gatherv(input->data(), mpiCount(input->numel(), "gather"), type, nullptr,
                              nullptr, nullptr, type, int(root), comm_),
               "MPI_Gatherv");
      return;
    }
    const bool rootSends = input != nullptr;
    const Blocks blocks = rootedBlocks(output->numel(), root, rootSends, "gather");
    checkMpi(m_.MPI_Gatherv(rootSends ? input->data() : nullptr, blocks.counts[size_t(root)], type,
                            output->data(), blocks.counts.data(), blocks.displacements.data(), type,
                            int(root), comm_),
             "MPI_Gatherv");
  }

  void scatter(const Tensor* input, Tensor* output, int64_t root, CUstream) override {
    const Tensor& mine = output != nullptr ? *output : *input;
    MPI_Datatype type = mpiDataType(mine.dtype());
    auto watch = step("scatter", /*symmetric=*/false);
    if (position_ != root) {
      checkMpi(m_.MPI_Scatterv(nullptr, nullptr, nullptr, type, output->data(),
                               mpiCount(output->numel(), "scatter"), type, int(root), comm_),
               "MPI_Scatterv");
      return;
    }
    const bool rootReceives = output != nullptr;
    const Blocks blocks = rootedBlocks(input->numel(), root, rootReceives, "scatter");
    checkMpi(m_.MPI_Scatterv(input->data(), blocks.counts.data(), blocks.displacements.data(), type,
                             rootReceives ? output->data() : nullptr, blocks.counts[size_t(root)],
                             type, int(root), comm_),
             "MPI_Scatterv");
  }

  // MPI_Reduce takes every member's contribution, so a root that sends nothing contributes the
  // op's identity, written into its output and reduced in place.
  void reduce(const Tensor* input, Tensor* output, ReduceOp op, int64_t root, CUstream) override {
    const Tensor& mine = input != nullptr ? *input : *output;
    MPI_Datatype type = mpiDataType(mine.dtype());
    MPI_Op mpiOp = detail::mpiReduceOp(mine.dtype(), op);
    const int count = mpiCount(mine.numel(), "reduce");
    auto watch = step("reduce", /*symmetric=*/false);
    if (position_ != root) {
      checkMpi(m_.MPI_Reduce(input->data(), nullptr, count, type, mpiOp, int(root), comm_),
               "MPI_Reduce");
      return;
    }
    const void* send = input != nullptr ? input->data() : MPI_IN_PLACE;
    if (input == nullptr) output->fill(reduceIdentity(output->dtype(), op));
    checkMpi(m_.MPI_Reduce(send, output->data(), count, type, mpiOp, int(root), comm_),
             "MPI_Reduce");
  }

  // The team's agreement while it sets NCCL up (TeamExchange), on the same communicator.
  bool allOk(bool mine) {
    int ok = mine ? 1 : 0;
    int all = 0;
    Watch watch({"agreeing to set up NCCL", Channel::Setup, &team_, 1});
    checkMpi(m_.MPI_Allreduce(&ok, &all, 1, m_.intType, m_.opLand, comm_), "MPI_Allreduce");
    return all != 0;
  }
  void broadcastFromFirst(void* bytes, size_t size) {
    Watch watch({"sending the NCCL id", Channel::Setup, &team_, 1, /*symmetric=*/false});
    checkMpi(m_.MPI_Bcast(bytes, int(size), m_.byteType, 0, comm_), "MPI_Bcast");
  }

 private:
  // On the root of a gather or scatter: each position's count and displacement in the whole
  // tensor of `numel` elements, in blocks of rootedBlock's order.
  struct Blocks {
    std::vector<int> counts;
    std::vector<int> displacements;
  };
  Blocks rootedBlocks(int64_t numel, int64_t root, bool rootTakesPart, const char* what) const {
    const int64_t parts = size_ - (rootTakesPart ? 0 : 1);
    const int64_t block = numel / parts;
    (void)mpiCount(numel, what);  // every displacement fits when the whole does
    Blocks b{std::vector<int>(size_t(size_), 0), std::vector<int>(size_t(size_), 0)};
    for (int64_t q = 0; q < size_; ++q) {
      if (q == root && !rootTakesPart) continue;
      b.counts[size_t(q)] = int(block);
      b.displacements[size_t(q)] = int(rootedBlock(q, root, rootTakesPart) * block);
    }
    return b;
  }

  // The guard's view of the next call: its name, the team and its number on the team.
  detail::Watch step(const char* what, bool symmetric = true) {
    return detail::Watch({what, detail::Channel::Team, &team_, ++steps_, symmetric});
  }

  const MpiApi& m_;
  MPI_Comm comm_;
  Team team_;  // world ranks, in the order of comm_'s ranks
  int64_t steps_ = 0;
  int position_ = 0;
  int size_ = 1;
};

// A communicator of the team's world ranks, in team order (rank i of it is team[i]).
MPI_Comm subCommunicator(const Team& team) {
  const MpiApi& m = mpi();
  MPI_Group world = m.groupNull;
  MPI_Group group = m.groupNull;
  checkMpi(m.MPI_Comm_group(m.commWorld, &world), "MPI_Comm_group");
  std::vector<int> ranks(team.begin(), team.end());
  int r = m.MPI_Group_incl(world, int(ranks.size()), ranks.data(), &group);
  m.MPI_Group_free(&world);
  checkMpi(r, "MPI_Group_incl");
  MPI_Comm comm = m.commNull;
  {
    // Collective over the team: a member that never comes (or names another team) keeps the
    // others here, which the guard times.
    Watch watch({"creating the team's MPI communicator", Channel::Setup, &team, 1});
    r = m.MPI_Comm_create_group(m.commWorld, group, /*tag=*/0, &comm);
  }
  m.MPI_Group_free(&group);
  checkMpi(r, "MPI_Comm_create_group");
  return comm;
}

}  // namespace

std::unique_ptr<TeamTransport> makeMpiTransport(const Team& team, TeamExchange& exchange) {
  auto transport = std::make_unique<MpiTransport>(subCommunicator(team), team);
  MpiTransport* t = transport.get();
  exchange.allOk = [t](bool mine) { return t->allOk(mine); };
  exchange.broadcastFromFirst = [t](void* bytes, size_t size) {
    t->broadcastFromFirst(bytes, size);
  };
  return transport;
}

}  // namespace loom::multidevice
