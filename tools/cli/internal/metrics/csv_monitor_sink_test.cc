// Copyright 2026 The zero3 Authors.

#include "tools/cli/internal/metrics/csv_monitor_sink.h"

#include <filesystem>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "tools/cli/internal/metrics/test_util.h"

namespace zero3 {
namespace cli {
namespace internal {
namespace metrics {
namespace {

using ::testing::HasSubstr;
using ::zero3::testing::StatusIs;

std::set<std::string> FilesIn(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

// Python's repr(float) of each value (checked with CPython 3.11).
TEST(CsvMonitorSinkTest, PythonFloat) {
  EXPECT_EQ(PythonFloat(2), "2.0");
  EXPECT_EQ(PythonFloat(0.001), "0.001");
  EXPECT_EQ(PythonFloat(1e-5), "1e-05");
  EXPECT_EQ(PythonFloat(0.0001), "0.0001");
  EXPECT_EQ(PythonFloat(12600.5), "12600.5");
  EXPECT_EQ(PythonFloat(65536), "65536.0");
  EXPECT_EQ(PythonFloat(1e16), "1e+16");
  EXPECT_EQ(PythonFloat(1.5e16), "1.5e+16");
  EXPECT_EQ(PythonFloat(123456789012345.6), "123456789012345.6");
  EXPECT_EQ(PythonFloat(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(PythonFloat(-0.0), "-0.0");
  EXPECT_EQ(PythonFloat(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(PythonFloat(std::nan("")), "nan");
  EXPECT_EQ(PythonFloat(-HUGE_VAL), "-inf");
}

TEST(CsvMonitorSinkTest, FileNames) {
  EXPECT_EQ(CsvFileName("Train/Samples/train_loss"),
            "Train_Samples_train_loss.csv");
  EXPECT_EQ(CsvFileName("a b/c"), "a_b_c.csv");
}

TEST(CsvMonitorSinkTest, OneFilePerTagAsDeepSpeedWritesThem) {
  const std::string dir = FreshDir("csv") + "/out/job";
  EventOptions options;
  options.fp16 = true;
  ASSERT_OK_AND_ASSIGN(auto sink, CsvMonitorSink::Create(dir, options));
  // Created up front, each with its header.
  EXPECT_EQ(ReadFile(dir + "/Train_Samples_train_loss.csv"),
            "step,train_loss\r\n");
  ASSERT_OK(sink->Write(TestStep(1, true)));
  ASSERT_OK(sink->Write(TestStep(2, true)));
  EXPECT_EQ(FilesIn(dir),
            (std::set<std::string>{
                "Train_Samples_train_loss.csv", "Train_Samples_lr.csv",
                "Train_Samples_loss_scale.csv",
                "Train_Samples_elapsed_time_ms_forward.csv",
                "Train_Samples_elapsed_time_ms_backward.csv",
                "Train_Samples_elapsed_time_ms_step.csv",
                "Train_Samples_grad_norm.csv", "Train_Samples_tokens_per_s.csv",
                "Train_Samples_mfu.csv"}));
  // The loss at the samples before the step, the rest after it.
  EXPECT_EQ(ReadFile(dir + "/Train_Samples_train_loss.csv"),
            "step,train_loss\r\n0,4.5\r\n16,3.5\r\n");
  EXPECT_EQ(ReadFile(dir + "/Train_Samples_lr.csv"),
            "step,lr\r\n16,0.001\r\n32,0.001\r\n");
  EXPECT_EQ(ReadFile(dir + "/Train_Samples_loss_scale.csv"),
            "step,loss_scale\r\n16,65536.0\r\n32,65536.0\r\n");
  EXPECT_EQ(ReadFile(dir + "/Train_Samples_elapsed_time_ms_forward.csv"),
            "step,elapsed_time_ms_forward\r\n16,1.5\r\n32,3.0\r\n");
}

TEST(CsvMonitorSinkTest, TimingModeHasNoLossFiles) {
  const std::string dir = FreshDir("csv_timing");
  EventOptions options;
  options.has_loss = false;
  ASSERT_OK_AND_ASSIGN(auto sink, CsvMonitorSink::Create(dir, options));
  ASSERT_OK(sink->Write(TestStep(1, false)));
  const std::set<std::string> files = FilesIn(dir);
  EXPECT_EQ(files.count("Train_Samples_train_loss.csv"), 0u);
  EXPECT_EQ(files.count("Train_Samples_grad_norm.csv"), 0u);
  EXPECT_EQ(files.count("Train_Samples_loss_scale.csv"), 0u);
  EXPECT_EQ(ReadFile(dir + "/Train_Samples_mfu.csv"),
            "step,mfu\r\n16,0.375\r\n");
}

TEST(CsvMonitorSinkTest, DirectoryThatIsAFileIsAnError) {
  const std::string file = FreshDir("csv_file");
  ASSERT_OK(OutputFile::Create(file, "test").status());
  EXPECT_THAT(CsvMonitorSink::Create(file + "/job", EventOptions()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("csv_monitor: cannot create directory " +
                                 file + "/job")));
}

}  // namespace
}  // namespace metrics
}  // namespace internal
}  // namespace cli
}  // namespace zero3
