// Copyright 2026 The zero3 Authors.

#include "core/runtime/swap_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

struct AlignedFree {
  void operator()(char* p) const { std::free(p); }
};
using Aligned = std::unique_ptr<char[], AlignedFree>;

Aligned Allocate(int64_t bytes) {
  return Aligned(static_cast<char*>(
      std::aligned_alloc(SwapFile::kAlignment, static_cast<size_t>(bytes))));
}

std::string TestDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp != nullptr ? tmp : "/tmp";
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void Fill(char* p, int64_t n, unsigned seed) {
  for (int64_t i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    p[i] = static_cast<char>(seed >> 16);
  }
}

SwapOptions Small(bool uring) {
  SwapOptions o;
  o.block_size = 8192;  // several requests per transfer
  o.queue_depth = 3;
  o.use_uring = uring;
  return o;
}

class SwapFileTest : public ::testing::TestWithParam<bool> {};

// What is written comes back, transfers overlapping one another, through
// io_uring and synchronously.
TEST_P(SwapFileTest, WritesAndReadsBack) {
  constexpr int64_t kBytes = 5 * 8192 + 4096;
  ASSERT_OK_AND_ASSIGN(auto f, SwapFile::Create(TestDir(), "roundtrip.swap",
                                                3 * kBytes, Small(GetParam())));
  EXPECT_EQ(f->uring(), GetParam());
  EXPECT_EQ(f->size(), 3 * kBytes);
  Aligned a = Allocate(kBytes), b = Allocate(kBytes), back = Allocate(kBytes);
  Fill(a.get(), kBytes, 1);
  Fill(b.get(), kBytes, 2);
  ASSERT_OK_AND_ASSIGN(const int64_t wa, f->Write(0, a.get(), kBytes));
  ASSERT_OK_AND_ASSIGN(const int64_t wb, f->Write(2 * kBytes, b.get(), kBytes));
  ASSERT_THAT(f->Wait(wb), IsOk());
  ASSERT_THAT(f->Wait(wa), IsOk());
  ASSERT_OK_AND_ASSIGN(const int64_t r,
                       f->Read(2 * kBytes, back.get(), kBytes));
  // A write of another region while the read is in flight.
  ASSERT_OK_AND_ASSIGN(const int64_t w, f->Write(kBytes, a.get(), kBytes));
  ASSERT_THAT(f->Wait(r), IsOk());
  EXPECT_EQ(std::memcmp(back.get(), b.get(), kBytes), 0);
  ASSERT_THAT(f->WaitAll(), IsOk());
  ASSERT_OK_AND_ASSIGN(const int64_t r2, f->Read(kBytes, back.get(), kBytes));
  ASSERT_THAT(f->Wait(r2), IsOk());
  EXPECT_EQ(std::memcmp(back.get(), a.get(), kBytes), 0);
  EXPECT_THAT(f->Wait(r2), StatusIs(absl::StatusCode::kInvalidArgument));
}

// An injected EIO fails the read it hits, naming the file, the operation
// and the reason; ENOSPC on a write says to free space. Transfers after
// them work.
TEST_P(SwapFileTest, FaultsNameThePathAndTheOperation) {
  ASSERT_OK_AND_ASSIGN(auto f, SwapFile::Create(TestDir(), "faults.swap", 65536,
                                                Small(GetParam())));
  Aligned buf = Allocate(65536);
  Fill(buf.get(), 65536, 3);
  f->InjectFault(/*write=*/false, 1, EIO);
  ASSERT_OK_AND_ASSIGN(const int64_t r, f->Read(0, buf.get(), 65536));
  EXPECT_THAT(f->Wait(r),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("reading the swap file"),
                             HasSubstr(f->path()), HasSubstr("errno 5"))));
  f->InjectFault(/*write=*/true, 0, ENOSPC);
  ASSERT_OK_AND_ASSIGN(const int64_t w, f->Write(8192, buf.get(), 8192));
  EXPECT_THAT(f->Wait(w), StatusIs(absl::StatusCode::kResourceExhausted,
                                   AllOf(HasSubstr("writing the swap file"),
                                         HasSubstr("at byte 8192"),
                                         HasSubstr("free space"))));
  ASSERT_OK_AND_ASSIGN(const int64_t ok, f->Write(0, buf.get(), 65536));
  EXPECT_THAT(f->Wait(ok), IsOk());
}

INSTANTIATE_TEST_SUITE_P(Uring, SwapFileTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "io_uring" : "synchronous";
                         });

// The file exists while the SwapFile does and is removed after; a second
// one of the same name is refused while the first holds it; a stale one (an
// earlier, killed run's: not locked) is replaced.
TEST(SwapFileLifetimeTest, CreatedLockedAndRemoved) {
  const std::string path = TestDir() + "/life.swap";
  {
    ASSERT_OK_AND_ASSIGN(
        auto f, SwapFile::Create(TestDir(), "life.swap", 4096, SwapOptions()));
    EXPECT_TRUE(Exists(path));
    EXPECT_FALSE(f->removed_stale());
    EXPECT_THAT(
        SwapFile::Create(TestDir(), "life.swap", 4096, SwapOptions()).status(),
        StatusIs(absl::StatusCode::kFailedPrecondition,
                 HasSubstr("in use by another running process")));
  }
  EXPECT_FALSE(Exists(path));
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    ASSERT_OK_AND_ASSIGN(
        auto f, SwapFile::Create(TestDir(), "life.swap", 4096, SwapOptions()));
    EXPECT_TRUE(f->removed_stale());
  }
  EXPECT_FALSE(Exists(path));
}

// O_DIRECT transfers must be aligned and inside the file; a directory that
// is not one is named with the fix.
TEST(SwapFileLifetimeTest, RefusesWhatItCannotDo) {
  EXPECT_THAT(SwapFile::Create(TestDir() + "/no/such/dir", "x.swap", 4096,
                               SwapOptions())
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("no/such/dir"),
                             HasSubstr("is not a directory"))));
  SwapOptions bad;
  bad.block_size = 1000;
  EXPECT_THAT(
      SwapFile::Create(TestDir(), "x.swap", 4096, bad).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("block_size")));
  bad = SwapOptions();
  bad.queue_depth = 0;
  EXPECT_THAT(
      SwapFile::Create(TestDir(), "x.swap", 4096, bad).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("queue_depth")));
  ASSERT_OK_AND_ASSIGN(
      auto f, SwapFile::Create(TestDir(), "align.swap", 8192, SwapOptions()));
  Aligned buf = Allocate(16384);
  EXPECT_THAT(f->Read(0, buf.get(), 16384).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("outside the swap file")));
  if (f->direct()) {
    EXPECT_THAT(
        f->Read(0, buf.get() + 8, 4096).status(),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not aligned")));
    EXPECT_THAT(
        f->Read(512, buf.get(), 4096).status(),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not aligned")));
  }
}

// Buffered I/O (asked for, or on a file system without O_DIRECT, as tmpfs
// before Linux 6.6) takes any offset, size and address.
TEST(SwapFileLifetimeTest, BufferedTakesAnyOffset) {
  SwapOptions buffered;
  buffered.direct = false;
  ASSERT_OK_AND_ASSIGN(
      auto f, SwapFile::Create(TestDir(), "buffered.swap", 10000, buffered));
  EXPECT_FALSE(f->direct());
  std::vector<char> out(777), back(777);
  Fill(out.data(), 777, 4);
  ASSERT_OK_AND_ASSIGN(const int64_t w, f->Write(13, out.data(), 777));
  ASSERT_THAT(f->Wait(w), IsOk());
  ASSERT_OK_AND_ASSIGN(const int64_t r, f->Read(13, back.data(), 777));
  ASSERT_THAT(f->Wait(r), IsOk());
  EXPECT_EQ(out, back);
}

}  // namespace
}  // namespace runtime
}  // namespace zero3
