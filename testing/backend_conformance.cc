// Copyright 2026 The zero3 Authors.

#include "testing/backend_conformance.h"

#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/runtime/launcher.h"
#include "core/util/check.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "testing/internal/conformance.h"
#include "testing/status_matchers.h"

namespace zero3 {
namespace testing {
namespace {

using conformance_internal::ConformanceCase;

// One registered test: runs the case's rank function on a fresh backend.
class ConformanceTest : public ::testing::Test {
 public:
  ConformanceTest(ConformanceBackend backend, ConformanceCase test_case)
      : backend_(std::move(backend)), case_(std::move(test_case)) {}

  void TestBody() override {
    if (backend_.skip_reason) {
      const std::string reason = backend_.skip_reason();
      if (!reason.empty()) GTEST_SKIP() << reason;
    }
    const runtime::RankFunction& body = case_.body;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::Launcher> launcher,
                         backend_.launcher(case_.ranks));
    ASSERT_OK(launcher->Run([&body](runtime::Runtime& rt) -> absl::Status {
      if (!rt.computes_values()) {
        return absl::FailedPreconditionError(
            "the conformance suite needs a backend that computes values");
      }
      return body(rt);
    })) << "on "
        << case_.ranks << " rank(s)";
    // The suite's programs are race-free: anything the backend found is a
    // bug of the backend.
    std::ostringstream report;
    ASSERT_OK_AND_ASSIGN(const int problems, launcher->Report(report));
    EXPECT_EQ(problems, 0) << report.str();
  }

 private:
  const ConformanceBackend backend_;
  const ConformanceCase case_;
};

}  // namespace

void RegisterConformanceTests(const ConformanceBackend& backend) {
  ZR_CHECK(!backend.name.empty()) << "a conformance backend needs a name";
  ZR_CHECK(backend.launcher)
      << "conformance backend " << backend.name << " has no launcher";
  ZR_CHECK_GE(backend.max_ranks, 1) << backend.name;
  std::vector<ConformanceCase> cases = conformance_internal::RuntimeCases();
  for (std::vector<ConformanceCase> more :
       {conformance_internal::KernelCases(),
        conformance_internal::CollectiveCases(backend.max_ranks)}) {
    for (ConformanceCase& c : more) cases.push_back(std::move(c));
  }
  for (ConformanceCase& c : cases) {
    const std::string suite = absl::StrCat(backend.name, "/", c.group);
    const std::string name = c.name;
    const char* file = c.file;
    const int line = c.line;
    ::testing::RegisterTest(suite.c_str(), name.c_str(), /*type_param=*/nullptr,
                            /*value_param=*/nullptr, file, line,
                            [backend, c = std::move(c)]() -> ::testing::Test* {
                              return new ConformanceTest(backend, c);
                            });
  }
}

}  // namespace testing
}  // namespace zero3
