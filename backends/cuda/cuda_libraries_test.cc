// Copyright 2026 The zero3 Authors.

#include "backends/cuda/cuda_libraries.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zero3 {
namespace cuda {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CudaLibrariesTest, SonameThenTheToolkitsDirectories) {
  EXPECT_THAT(CudaLibraryCandidates("libnccl.so.2"),
              ElementsAre("libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2",
                          "/usr/local/cuda-13.0/lib64/libnccl.so.2"));
}

// Whether or not this machine has them: loading succeeds exactly when every
// library is found, and a failure names the missing one and the fix.
TEST(CudaLibrariesTest, LoadingAgreesWithWhatIsFound) {
  const std::vector<std::string> lines = DescribeCudaLibraries();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], StartsWith("libcublasLt.so.13: "));
  EXPECT_THAT(lines[1], StartsWith("libcublas.so.13: "));
  EXPECT_THAT(lines[2], StartsWith("libnccl.so.2: "));
  bool all_found = true;
  for (const std::string& line : lines) {
    all_found = all_found && absl::StrContains(line, ": found (");
  }
  const absl::Status status = LoadCudaLibraries();
  EXPECT_EQ(status.ok(), all_found) << status;
  if (!status.ok()) {
    EXPECT_THAT(status.message(), HasSubstr("docs/gpu.md"));
    EXPECT_THAT(status.message(), HasSubstr("LD_LIBRARY_PATH"));
  }
}

}  // namespace
}  // namespace cuda
}  // namespace zero3
