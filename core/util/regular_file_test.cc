// Copyright 2026 The zero3 Authors.

#include "core/util/regular_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

TEST(RegularFileTest, OnlyRegularFilesOpen) {
  const std::string dir = ::testing::TempDir();
  const std::string file = dir + "/plain";
  std::ofstream(file) << "x";
  ASSERT_OK_AND_ASSIGN(const int fd, OpenRegularFile(file));
  ::close(fd);
  // A FIFO nobody writes to: refused at once, not waited on.
  const std::string fifo = dir + "/fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(CheckRegularFile(fifo),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is a FIFO (named pipe), not a regular")));
  EXPECT_THAT(CheckRegularFile("/dev/zero"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("character device")));
  EXPECT_THAT(CheckRegularFile(dir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is a directory")));
  EXPECT_THAT(CheckRegularFile(dir + "/none"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("No such file or directory")));
  // A link to a device is the device.
  const std::string link = dir + "/zero_link";
  ::unlink(link.c_str());
  ASSERT_EQ(::symlink("/dev/zero", link.c_str()), 0);
  EXPECT_FALSE(CheckRegularFile(link).ok());
}

}  // namespace
}  // namespace zero3
