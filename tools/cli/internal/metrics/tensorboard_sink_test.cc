// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/tensorboard_sink.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "core/util/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "third_party/tensorboard/event.pb.h"
#include "tools/cli/internal/metrics/test_util.h"
#include "tools/cli/internal/metrics/tfrecord.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::zero3::testing::StatusIs;

uint64_t LittleEndian(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) {
    v |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  }
  return v;
}

// The framing, byte by byte.
TEST(TfRecordTest, FramesAndReadsBack) {
  const std::string framed = FrameRecord("abc");
  ASSERT_EQ(framed.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(LittleEndian(framed, 0, 8), 3u);
  EXPECT_EQ(LittleEndian(framed, 8, 4),
            MaskCrc32c(Crc32c(std::string("\3\0\0\0\0\0\0\0", 8))));
  EXPECT_EQ(framed.substr(12, 3), "abc");
  EXPECT_EQ(LittleEndian(framed, 15, 4), MaskCrc32c(Crc32c("abc")));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> records,
                       ReadRecords(framed + FrameRecord(""), "f"));
  EXPECT_EQ(records, (std::vector<std::string>{"abc", ""}));
}

TEST(TfRecordTest, ReaderChecksEveryCrcAndLength) {
  const std::string good = FrameRecord("abc") + FrameRecord("defg");
  for (size_t at :
       {size_t{0}, size_t{9}, size_t{13}, size_t{17}, size_t{20}, size_t{37}}) {
    std::string bad = good;
    bad[at] ^= 1;
    EXPECT_THAT(ReadRecords(bad, "events").status(),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("events: ")))
        << "byte " << at;
  }
  EXPECT_THAT(ReadRecords(good.substr(0, good.size() - 1), "events").status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("record 1 at byte 19: truncated data")));
}

// The event file read back: records, CRCs, Events, tags, steps and values.
TEST(TensorBoardSinkTest, EventFileReadsBack) {
  const std::string dir = FreshDir("tb") + "/logs/job";
  EventOptions options;
  ASSERT_OK_AND_ASSIGN(auto sink, TensorBoardSink::Create(dir, options, [] {
                         return 1767225600.25;
                       }));
  ASSERT_OK(sink->Write(TestStep(1, true)));
  ASSERT_OK(sink->Write(TestStep(2, true)));
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    files.push_back(e.path().filename().string());
  }
  ASSERT_EQ(files.size(), 1u);
  EXPECT_THAT(files[0],
              MatchesRegex("events\\.out\\.tfevents\\.1767225600\\..+\\.[0-9]+"
                           "\\.0"));
  EXPECT_EQ(dir + "/" + files[0], sink->path());

  ASSERT_OK_AND_ASSIGN(std::vector<std::string> records,
                       ReadRecords(ReadFile(sink->path()), files[0]));
  const std::vector<std::string> tags = DeepSpeedTags(options);
  ASSERT_EQ(records.size(), 1 + 2 * tags.size());
  tensorboard::Event first;
  ASSERT_TRUE(first.ParseFromString(records[0]));
  EXPECT_EQ(first.file_version(), "brain.Event:2");
  EXPECT_EQ(first.wall_time(), 1767225600.25);

  for (int step = 1; step <= 2; ++step) {
    const StepMetrics m = TestStep(step, true);
    const std::vector<ScalarEvent> want = DeepSpeedEvents(m, options);
    for (size_t i = 0; i < want.size(); ++i) {
      tensorboard::Event event;
      ASSERT_TRUE(
          event.ParseFromString(records[1 + (step - 1) * tags.size() + i]));
      ASSERT_TRUE(event.has_summary());
      ASSERT_EQ(event.summary().value_size(), 1);
      const tensorboard::Summary::Value& v = event.summary().value(0);
      EXPECT_EQ(v.tag(), tags[i]);
      EXPECT_EQ(v.simple_value(), static_cast<float>(want[i].value));
      EXPECT_EQ(event.step(), want[i].step);
    }
  }
  // Spot checks against the metrics themselves.
  tensorboard::Event loss, lr;
  ASSERT_TRUE(loss.ParseFromString(records[1]));
  ASSERT_TRUE(lr.ParseFromString(records[2]));
  EXPECT_EQ(loss.summary().value(0).tag(), "Train/Samples/train_loss");
  EXPECT_EQ(loss.summary().value(0).simple_value(), 4.5f);
  EXPECT_EQ(loss.step(), 0);
  EXPECT_EQ(lr.summary().value(0).tag(), "Train/Samples/lr");
  EXPECT_EQ(lr.summary().value(0).simple_value(), 1e-3f);
  EXPECT_EQ(lr.step(), 16);
}

// The bytes TensorBoard 2.21's own RecordWriter wrote for the same two
// events (Python: Event(wall_time=1767225600.25,
// file_version="brain.Event:2") and Event(wall_time=1767225600.25, step=16,
// summary=Summary(value=[Summary.Value(tag="Train/Samples/lr",
// simple_value=0.001)])), each serialized and written with
// tensorboard.summary.writer.record_writer.RecordWriter).
constexpr char kTensorBoardBytes[] =
    "1800000000000000a37f4b2209000010406e55da411a0d627261696e2e4576656e743a"
    "327ce7ce862600000000000000734fe30009000010406e55da4110102a190a170a1054"
    "7261696e2f53616d706c65732f6c72156f12833a6351a0a1";

std::string Hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) out += absl::StrFormat("%02x", c);
  return out;
}

TEST(TensorBoardSinkTest, BytesEqualTensorBoardsOwnWriter) {
  const std::string dir = FreshDir("tb_bytes");
  EventOptions options;
  options.has_loss = false;  // the step's first event is then the lr
  ASSERT_OK_AND_ASSIGN(auto sink, TensorBoardSink::Create(dir, options, [] {
                         return 1767225600.25;
                       }));
  ASSERT_OK(sink->Write(TestStep(1, false)));
  const std::string written = Hex(ReadFile(sink->path()));
  const std::string want = kTensorBoardBytes;
  ASSERT_GE(written.size(), want.size());
  EXPECT_EQ(written.substr(0, want.size()), want);
}

TEST(TensorBoardSinkTest, UnwritableDirectoryIsAnError) {
  const std::string file = FreshDir("tb_file");
  ASSERT_OK(OutputFile::Create(file, "test").status());
  EXPECT_THAT(
      TensorBoardSink::Create(file, EventOptions()).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("tensorboard: cannot create directory " + file)));
}

}  // namespace
}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
