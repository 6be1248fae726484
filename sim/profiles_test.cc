// Copyright 2026 The zero3 Authors.

#include "sim/profiles.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cost_model.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace sim {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

// Writes `text` to a fresh file under the test's temporary directory.
std::string WriteTempFile(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path =
      absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
  std::ofstream(path) << text;
  return path;
}

TEST(ProfilesTest, ShipsTheDocumentedProfiles) {
  EXPECT_THAT(ProfileNames(), IsSupersetOf({"a100_sxm", "h100_sxm", "h200_sxm",
                                            "rtx4080s_pcie4"}));
}

TEST(ProfilesTest, EveryShippedProfileLoadsAndCosts) {
  for (const std::string& name : ProfileNames()) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(HardwareProfile profile, LoadProfile(name));
    // The file's own name field agrees with the name it ships under, so
    // traces and reports name the profile the user asked for.
    EXPECT_EQ(profile.name(), name);
    EXPECT_FALSE(profile.description().empty());
    ASSERT_OK_AND_ASSIGN(CostModel cost, CostModel::Create(profile));
    // A 4096^3 bf16 GEMM and a 64 MiB all-gather over a node cost a
    // positive, finite time.
    KernelWork gemm;
    gemm.compute_class = ComputeClass::kMatmul;
    gemm.flops = 2.0 * 4096 * 4096 * 4096;
    gemm.bytes = 3.0 * 4096 * 4096 * 2;
    EXPECT_GT(cost.KernelNanos(gemm), 0);
    EXPECT_GT(cost.CollectiveNanos(CollectiveKind::kAllGather, 64 << 20,
                                   profile.fabric().gpus_per_node(),
                                   /*spans_nodes=*/false),
              0);
  }
}

TEST(ProfilesTest, ProfileNamesAreSorted) {
  const std::vector<std::string> names = ProfileNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(ProfilesTest, UnknownNameListsShippedProfilesAndSuggestsNearest) {
  EXPECT_THAT(LoadProfile("h200"),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("unknown hardware profile 'h200'"),
                             HasSubstr("did you mean 'h200_sxm'"),
                             HasSubstr("a100_sxm, h100_sxm, h200_sxm"))));
  EXPECT_THAT(LoadProfile("a100_smx"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("did you mean 'a100_sxm'")));
  EXPECT_THAT(LoadProfile("rtx4080s"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("did you mean 'rtx4080s_pcie4'")));
}

TEST(ProfilesTest, LoadsAFileByPath) {
  ASSERT_OK_AND_ASSIGN(HardwareProfile shipped, LoadProfile("a100_sxm"));
  shipped.set_name("my_cluster");
  shipped.mutable_gpu()->set_memory_gib(40);
  const std::string path =
      WriteTempFile("my_cluster.textproto", shipped.DebugString());
  ASSERT_OK_AND_ASSIGN(HardwareProfile loaded, LoadProfile(path));
  EXPECT_EQ(loaded.name(), "my_cluster");
  EXPECT_EQ(loaded.gpu().memory_gib(), 40);
  EXPECT_EQ(loaded.fabric().allreduce_busbw_size(),
            shipped.fabric().allreduce_busbw_size());
}

TEST(ProfilesTest, MissingFileIsNotFound) {
  EXPECT_THAT(LoadProfile("no/such/profile.textproto"),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("no/such/profile.textproto"),
                             HasSubstr("shipped profiles: "))));
}

TEST(ProfilesTest, DirectoryIsRejected) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(dir != nullptr ? dir : "/tmp", "/");
  EXPECT_THAT(LoadProfile(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("is a directory")));
}

TEST(ProfilesTest, ParseErrorNamesFileLineAndColumn) {
  // The parser places an unknown field's error just after its name.
  const std::string path = WriteTempFile("broken.textproto",
                                         "name: \"broken\"\n"
                                         "gpu {\n"
                                         "  memory_gib: 80\n"
                                         "  hbm_bandwith_gbps: 2039\n"
                                         "}\n");
  EXPECT_THAT(LoadProfile(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(absl::StrCat(path, ":4:20: ")),
                             HasSubstr("hbm_bandwith_gbps"))));
}

TEST(ProfilesTest, SyntaxErrorNamesLineAndColumn) {
  EXPECT_THAT(
      ParseProfile("name: \"x\"\ngpu { memory_gib: }\n", "<flag>"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("<flag>:2:19: ")));
}

TEST(ProfilesTest, IncompleteProfileNamesFileAndField) {
  const std::string path =
      WriteTempFile("incomplete.textproto", "name: \"incomplete\"\n");
  EXPECT_THAT(LoadProfile(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path), HasSubstr("gpu.memory_gib"))));
}

TEST(ProfilesTest, ParseProfileAcceptsAShippedProfilesText) {
  ASSERT_OK_AND_ASSIGN(HardwareProfile h200, LoadProfile("h200_sxm"));
  EXPECT_THAT(ParseProfile(h200.DebugString(), "<copy>"), IsOk());
}

}  // namespace
}  // namespace sim
}  // namespace zero3
