// Copyright 2026 The zero3 Authors.

#include "testing/backend_conformance.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
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
    EXPECT_OK(backend_.run(case_.ranks,
                           [&body](runtime::Runtime& rt) -> absl::Status {
                             if (!rt.computes_values()) {
                               return absl::FailedPreconditionError(
                                   "the conformance suite needs a backend "
                                   "that computes values");
                             }
                             return body(rt);
                           }))
        << "on " << case_.ranks << " rank(s)";
  }

 private:
  const ConformanceBackend backend_;
  const ConformanceCase case_;
};

}  // namespace

void RegisterConformanceTests(const ConformanceBackend& backend) {
  ZR_CHECK(!backend.name.empty()) << "a conformance backend needs a name";
  ZR_CHECK(backend.run) << "conformance backend " << backend.name
                        << " has no run function";
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
