// SPDX-License-Identifier: Apache-2.0
// The guard of a job of several ranks in one process (csrc/multidevice/guard.h): the step a rank
// waits in as its peers are told it (nested steps, the state's round trip through the wire), and
// how states are compared. The job-level behaviour runs under mpirun (mpi_failures_test.sh).
#include "multidevice/guard.h"

#include <gtest/gtest.h>

namespace loom::multidevice::detail {
namespace {

TEST(Guard, TheInnermostStepIsReportedAndTheOuterComesBack) {
  const Team team = {2, 0, 1};
  EXPECT_EQ(currentState().kind, RankState::Kind::Idle);
  {
    Watch outer({"allreduce", Channel::Team, &team, 3});
    RankState s = currentState();
    EXPECT_EQ(s.kind, RankState::Kind::Waiting);
    EXPECT_EQ(s.what, "allreduce");
    EXPECT_FALSE(s.world);
    EXPECT_EQ(s.team, team);
    EXPECT_EQ(s.seq, 3);
    EXPECT_TRUE(s.symmetric);
    {
      Watch inner({"broadcast", Channel::World, nullptr, 7, /*symmetric=*/false});
      s = currentState();
      EXPECT_EQ(s.what, "broadcast");
      EXPECT_TRUE(s.world);
      EXPECT_FALSE(s.symmetric);
      EXPECT_EQ(s.describe().rfind("waits in broadcast #7 on the world (for ", 0), 0)
          << s.describe();
    }
    s = currentState();
    EXPECT_EQ(s.what, "allreduce");
    EXPECT_EQ(s.seq, 3);
    EXPECT_EQ(s.describe().rfind("waits in allreduce #3 on team [2, 0, 1] (for ", 0), 0)
        << s.describe();
  }
  EXPECT_EQ(currentState().kind, RankState::Kind::Idle);
}

TEST(Guard, StatesSurviveTheWire) {
  const Team team = {0, 3};
  RankState s;
  {
    Watch w({"the ranks' agreement check", Channel::Checks, &team, 12});
    s = currentState();
  }
  RankState back = RankState::decode(s.encode());
  EXPECT_TRUE(back.sameStep(s));
  EXPECT_EQ(back.channel, Channel::Checks);
  EXPECT_TRUE(back.involves(3));
  EXPECT_FALSE(back.involves(1));
  RankState exiting;
  exiting.kind = RankState::Kind::Exiting;
  exiting.status = 4;
  back = RankState::decode(exiting.encode());
  EXPECT_EQ(back.kind, RankState::Kind::Exiting);
  EXPECT_EQ(back.describe(), "has left the program (exit status 4)");
  // Bytes that are not a state read as a rank doing nothing of Loom's.
  EXPECT_EQ(RankState::decode("garbage").kind, RankState::Kind::Idle);
}

TEST(Guard, StepsMatchOnlyOnOneChannelTeamAndNumber) {
  const Team team = {0, 1};
  RankState a;
  RankState b;
  {
    Watch w({"barrier", Channel::World, nullptr, 1});
    a = currentState();
  }
  {
    Watch w({"barrier", Channel::World, nullptr, 1});
    b = currentState();
  }
  EXPECT_TRUE(a.sameStep(b));
  b.seq = 2;
  EXPECT_FALSE(a.sameStep(b));
  b.seq = 1;
  b.channel = Channel::Checks;
  EXPECT_FALSE(a.sameStep(b));
  b.channel = Channel::World;
  b.world = false;
  b.team = team;
  EXPECT_FALSE(a.sameStep(b));
}

}  // namespace
}  // namespace loom::multidevice::detail
