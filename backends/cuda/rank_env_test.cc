// Copyright 2026 The zero3 Authors.

#include "backends/cuda/rank_env.h"

#include <map>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace cuda {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

TEST(RankEnvTest, NoVariablesIsOneProcess) {
  ASSERT_OK_AND_ASSIGN(RankEnvironment env, ReadRankEnvironment(MapEnv({})));
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.world_size, 1);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_EQ(env.source, "none");
  EXPECT_TRUE(env.master_addr.empty());
}

TEST(RankEnvTest, TorchrunStyle) {
  ASSERT_OK_AND_ASSIGN(RankEnvironment env,
                       ReadRankEnvironment(MapEnv({{"RANK", "3"},
                                                   {"WORLD_SIZE", "8"},
                                                   {"LOCAL_RANK", "1"},
                                                   {"MASTER_ADDR", "node7"},
                                                   {"MASTER_PORT", "12345"}})));
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.source, "RANK/WORLD_SIZE/LOCAL_RANK");
  EXPECT_EQ(env.master_addr, "node7");
  EXPECT_EQ(env.master_port, 12345);
  EXPECT_TRUE(env.rendezvous_file.empty());
  EXPECT_EQ(env.Describe(),
            "rank 3 of 8 (local rank 1; from RANK/WORLD_SIZE/LOCAL_RANK)");
}

// Under torchrun its agent's store holds MASTER_PORT on rank 0's node: the
// rendezvous takes the next port, or ZERO3_RENDEZVOUS_PORT.
TEST(RankEnvTest, UnderTorchrunTheRendezvousLeavesMasterPortToTheStore) {
  std::map<std::string, std::string> vars = {{"RANK", "1"},
                                             {"WORLD_SIZE", "2"},
                                             {"LOCAL_RANK", "1"},
                                             {"MASTER_ADDR", "node0"},
                                             {"MASTER_PORT", "29500"},
                                             {"TORCHELASTIC_RUN_ID", "none"}};
  ASSERT_OK_AND_ASSIGN(RankEnvironment env, ReadRankEnvironment(MapEnv(vars)));
  EXPECT_EQ(env.master_port, 29501);
  vars["ZERO3_RENDEZVOUS_PORT"] = "40000";
  ASSERT_OK_AND_ASSIGN(env, ReadRankEnvironment(MapEnv(vars)));
  EXPECT_EQ(env.master_port, 40000);
  vars.erase("ZERO3_RENDEZVOUS_PORT");
  vars["MASTER_PORT"] = "65535";
  EXPECT_THAT(ReadRankEnvironment(MapEnv(vars)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ZERO3_RENDEZVOUS_PORT")));
  vars["ZERO3_RENDEZVOUS_PORT"] = "0";
  EXPECT_THAT(ReadRankEnvironment(MapEnv(vars)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ZERO3_RENDEZVOUS_PORT=0 is not a TCP port")));
}

TEST(RankEnvTest, MasterPortDefaultsTo29500) {
  ASSERT_OK_AND_ASSIGN(
      RankEnvironment env,
      ReadRankEnvironment(MapEnv({{"RANK", "0"},
                                  {"WORLD_SIZE", "2"},
                                  {"LOCAL_RANK", "0"},
                                  {"MASTER_ADDR", "127.0.0.1"}})));
  EXPECT_EQ(env.master_port, 29500);
}

TEST(RankEnvTest, Slurm) {
  ASSERT_OK_AND_ASSIGN(
      RankEnvironment env,
      ReadRankEnvironment(MapEnv({{"SLURM_PROCID", "5"},
                                  {"SLURM_NTASKS", "16"},
                                  {"SLURM_LOCALID", "5"},
                                  {"MASTER_ADDR", "gpu001"}})));
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 16);
  EXPECT_EQ(env.local_rank, 5);
  EXPECT_EQ(env.source, "SLURM_*");
}

// The job's identity (the file rendezvous passes over other jobs' files),
// from the launcher's variables, ZERO3_JOB_ID first.
TEST(RankEnvTest, JobIdentity) {
  const std::vector<std::pair<std::string, std::string>> two = {
      {"RANK", "1"},
      {"WORLD_SIZE", "2"},
      {"LOCAL_RANK", "1"},
      {"ZERO3_RENDEZVOUS_FILE", "/shared/id"}};
  struct Case {
    std::vector<std::pair<std::string, std::string>> vars;
    std::string job;
  };
  const Case cases[] = {
      {{}, ""},
      {{{"SLURM_JOB_ID", "77"}}, "slurm:77"},
      {{{"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "3"}}, "slurm:77.3"},
      {{{"TORCHELASTIC_RUN_ID", "abc"}, {"TORCHELASTIC_RESTART_COUNT", "1"}},
       "torchrun:abc.1"},
      {{{"PMIX_NAMESPACE", "prterun-x-1@1"}}, "PMIX_NAMESPACE:prterun-x-1@1"},
      {{{"ZERO3_JOB_ID", "mine"}, {"SLURM_JOB_ID", "77"}}, "mine"},
  };
  for (const Case& c : cases) {
    std::vector<std::pair<std::string, std::string>> vars = two;
    vars.insert(vars.end(), c.vars.begin(), c.vars.end());
    std::map<std::string, std::string> m(vars.begin(), vars.end());
    ASSERT_OK_AND_ASSIGN(RankEnvironment env, ReadRankEnvironment(MapEnv(m)));
    EXPECT_EQ(env.job, c.job);
  }
}

TEST(RankEnvTest, OpenMpi) {
  ASSERT_OK_AND_ASSIGN(
      RankEnvironment env,
      ReadRankEnvironment(MapEnv({{"OMPI_COMM_WORLD_RANK", "2"},
                                  {"OMPI_COMM_WORLD_SIZE", "4"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                  {"ZERO3_RENDEZVOUS_FILE", "/shared/id"}})));
  EXPECT_EQ(env.rank, 2);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_EQ(env.source, "OMPI_COMM_WORLD_*");
  EXPECT_EQ(env.rendezvous_file, "/shared/id");
}

// torchrun or mpirun inside a Slurm allocation: SLURM_PROCID describes the
// job step, the launcher's variables describe this process.
TEST(RankEnvTest, TorchrunWinsOverMpiAndSlurm) {
  ASSERT_OK_AND_ASSIGN(
      RankEnvironment env,
      ReadRankEnvironment(MapEnv({{"RANK", "1"},
                                  {"WORLD_SIZE", "2"},
                                  {"LOCAL_RANK", "1"},
                                  {"OMPI_COMM_WORLD_RANK", "0"},
                                  {"OMPI_COMM_WORLD_SIZE", "1"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                  {"SLURM_PROCID", "0"},
                                  {"SLURM_NTASKS", "1"},
                                  {"SLURM_LOCALID", "0"},
                                  {"MASTER_ADDR", "h"}})));
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.world_size, 2);
  EXPECT_EQ(env.source, "RANK/WORLD_SIZE/LOCAL_RANK");
}

TEST(RankEnvTest, MpiWinsOverSlurm) {
  ASSERT_OK_AND_ASSIGN(
      RankEnvironment env,
      ReadRankEnvironment(MapEnv({{"OMPI_COMM_WORLD_RANK", "3"},
                                  {"OMPI_COMM_WORLD_SIZE", "4"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                  {"SLURM_PROCID", "0"},
                                  {"SLURM_NTASKS", "1"},
                                  {"SLURM_LOCALID", "0"},
                                  {"MASTER_ADDR", "h"}})));
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.source, "OMPI_COMM_WORLD_*");
}

TEST(RankEnvTest, EmptyValueCountsAsUnset) {
  ASSERT_OK_AND_ASSIGN(RankEnvironment env,
                       ReadRankEnvironment(MapEnv({{"RANK", ""},
                                                   {"SLURM_PROCID", "1"},
                                                   {"SLURM_NTASKS", "2"},
                                                   {"SLURM_LOCALID", "1"},
                                                   {"MASTER_ADDR", "h"}})));
  EXPECT_EQ(env.source, "SLURM_*");
}

TEST(RankEnvTest, FileRendezvousWinsOverMasterAddr) {
  ASSERT_OK_AND_ASSIGN(RankEnvironment env,
                       ReadRankEnvironment(MapEnv(
                           {{"RANK", "1"},
                            {"WORLD_SIZE", "2"},
                            {"LOCAL_RANK", "1"},
                            {"MASTER_ADDR", "h"},
                            {"ZERO3_RENDEZVOUS_FILE", "/nfs/job42.id"}})));
  EXPECT_EQ(env.rendezvous_file, "/nfs/job42.id");
}

TEST(RankEnvTest, Timeout) {
  ASSERT_OK_AND_ASSIGN(
      RankEnvironment env,
      ReadRankEnvironment(MapEnv({{"ZERO3_RENDEZVOUS_TIMEOUT", "2.5"}})));
  EXPECT_EQ(env.rendezvous_timeout, absl::Milliseconds(2500));
  EXPECT_THAT(
      ReadRankEnvironment(MapEnv({{"ZERO3_RENDEZVOUS_TIMEOUT", "soon"}})),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("ZERO3_RENDEZVOUS_TIMEOUT='soon'")));
}

TEST(RankEnvTest, PartialTorchrunNamesTheMissingVariables) {
  EXPECT_THAT(
      ReadRankEnvironment(MapEnv({{"RANK", "1"}, {"MASTER_ADDR", "h"}})),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("RANK=1 is set"),
                     HasSubstr("WORLD_SIZE and LOCAL_RANK are not"))));
  EXPECT_THAT(ReadRankEnvironment(
                  MapEnv({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("SLURM_PROCID=0 is set"),
                             HasSubstr("SLURM_LOCALID is not"))));
}

TEST(RankEnvTest, BadNumbers) {
  EXPECT_THAT(ReadRankEnvironment(MapEnv(
                  {{"RANK", "one"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("RANK='one' is not a non-negative integer")));
  EXPECT_THAT(ReadRankEnvironment(MapEnv(
                  {{"RANK", "-1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("RANK")));
  EXPECT_THAT(ReadRankEnvironment(MapEnv(
                  {{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("RANK=2 is not below WORLD_SIZE=2")));
  EXPECT_THAT(
      ReadRankEnvironment(
          MapEnv({{"RANK", "0"}, {"WORLD_SIZE", "0"}, {"LOCAL_RANK", "0"}})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("WORLD_SIZE=0")));
  EXPECT_THAT(ReadRankEnvironment(MapEnv({{"RANK", "0"},
                                          {"WORLD_SIZE", "2"},
                                          {"LOCAL_RANK", "0"},
                                          {"MASTER_ADDR", "h"},
                                          {"MASTER_PORT", "70000"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("MASTER_PORT=70000 is not a TCP port")));
}

TEST(RankEnvTest, SeveralRanksNeedARendezvous) {
  EXPECT_THAT(ReadRankEnvironment(MapEnv(
                  {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("rank 0 of 2"), HasSubstr("MASTER_ADDR"),
                             HasSubstr("ZERO3_RENDEZVOUS_FILE"))));
  // One rank needs none.
  EXPECT_THAT(ReadRankEnvironment(MapEnv(
                  {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_RANK", "0"}})),
              IsOk());
}

TEST(ChooseDeviceTest, LocalRankSelectsTheDevice) {
  ASSERT_OK_AND_ASSIGN(int first, ChooseDevice(0, 2, std::nullopt));
  EXPECT_EQ(first, 0);
  ASSERT_OK_AND_ASSIGN(int second, ChooseDevice(1, 2, std::nullopt));
  EXPECT_EQ(second, 1);
}

TEST(ChooseDeviceTest, OneBoundDevicePerProcess) {
  // srun --gpus-per-task=1: every task sees its own GPU as device 0.
  ASSERT_OK_AND_ASSIGN(int device, ChooseDevice(3, 1, std::string("3")));
  EXPECT_EQ(device, 0);
}

TEST(ChooseDeviceTest, TooFewDevices) {
  EXPECT_THAT(
      ChooseDevice(2, 2, std::string("0,1")),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr("local rank 2"), HasSubstr("2 GPUs are visible"),
                     HasSubstr("CUDA_VISIBLE_DEVICES='0,1'"),
                     HasSubstr("at most 2 processes per node"))));
  EXPECT_THAT(ChooseDevice(1, 1, std::nullopt),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("CUDA_VISIBLE_DEVICES unset")));
  EXPECT_THAT(ChooseDevice(0, 0, std::nullopt),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no CUDA device is visible")));
}

// Where the rendezvous finds more ranks on the host than the launcher's
// variables said, a default pinned budget is shared again; a budget the
// user set, or a count no larger than assumed, stays.
TEST(PinnedShareTest, DefaultBudgetSharedAmongTheRanksFound) {
  const int64_t gib = int64_t{1} << 30;
  EXPECT_EQ(PinnedShare(64 * gib, true, 1, 8), 8 * gib);
  EXPECT_EQ(PinnedShare(32 * gib, true, 2, 8), 8 * gib);
  EXPECT_EQ(PinnedShare(8 * gib, true, 8, 8), 8 * gib);
  EXPECT_EQ(PinnedShare(8 * gib, true, 8, 4), 8 * gib);
  EXPECT_EQ(PinnedShare(64 * gib, false, 1, 8), 64 * gib);
  EXPECT_EQ(PinnedShare(64 * gib, true, 0, 8), 8 * gib);
}

}  // namespace
}  // namespace cuda
}  // namespace zero3
