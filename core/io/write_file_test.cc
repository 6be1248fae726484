// Copyright 2026 The zero3 Authors.

#include "core/io/write_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace io {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using ::zero3::testing::IsOk;
using ::zero3::testing::StatusIs;

std::string TempDir(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  mkdir(dir.c_str(), 0755);
  return dir;
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  return names;
}

// zlib's own reader, detecting gzip.
std::string Gunzip(const std::string& bytes) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 32), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buffer[4096];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof(buffer);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - z.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&z);
  return out;
}

TEST(WriteWholeFileTest, WritesPlainFilesWithUmaskPermissions) {
  const std::string dir = TempDir("plain");
  umask(022);
  ASSERT_THAT(WriteWholeFile(dir + "/a.json", "{}\n"), IsOk());
  EXPECT_EQ(Read(dir + "/a.json"), "{}\n");
  struct stat st;
  ASSERT_EQ(stat((dir + "/a.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_THAT(List(dir), UnorderedElementsAre("a.json"));
}

TEST(WriteWholeFileTest, GzipsNamesEndingInGz) {
  const std::string dir = TempDir("gz");
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "{\"ph\":\"X\"},";
  ASSERT_THAT(WriteWholeFile(dir + "/t.json.gz", text), IsOk());
  const std::string bytes = Read(dir + "/t.json.gz");
  ASSERT_GT(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  EXPECT_LT(bytes.size(), text.size() / 10);
  EXPECT_EQ(Gunzip(bytes), text);
}

TEST(WriteWholeFileTest, FailureLeavesNoTemporaryFile) {
  const std::string dir = TempDir("fail");
  const std::string sub = dir + "/sub";
  mkdir(sub.c_str(), 0755);
  // Renaming a file over a directory fails after the bytes were written.
  EXPECT_THAT(WriteWholeFile(sub, "x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(sub)));
  EXPECT_THAT(List(dir), UnorderedElementsAre("sub"));
  EXPECT_THAT(WriteWholeFile(dir + "/missing/x.json", "x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(dir + "/missing")));
}

}  // namespace
}  // namespace io
}  // namespace zero3
