// Copyright 2026 The zero3 Authors.
//
// status_macros.h: early return on error for absl::Status / absl::StatusOr.
//
//   ZR_RETURN_IF_ERROR(DoThing());
//   ZR_ASSIGN_OR_RETURN(Buffer b, AllocateBuffer(n));
//   ZR_ASSIGN_OR_RETURN(auto [x, y], MakePair());   // not supported: use a
//                                                   // named variable instead
//
// Both evaluate their argument exactly once. The returned status is the
// original one, unchanged; callers that want context add it with
// zero3::Annotate (below), which keeps the code and prefixes the message.

#ifndef ZERO3_CORE_UTIL_STATUS_MACROS_H_
#define ZERO3_CORE_UTIL_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace zero3 {

// Returns `status` with `context: ` prepended to its message; OK stays OK.
inline absl::Status Annotate(const absl::Status& status,
                             absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(context, ": ", status.message()));
}

namespace internal_status {
inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace internal_status
}  // namespace zero3

#define ZR_RETURN_IF_ERROR(expr)                                 \
  do {                                                           \
    const ::absl::Status zr_status_ =                            \
        ::zero3::internal_status::GetStatus(expr);               \
    if (ABSL_PREDICT_FALSE(!zr_status_.ok())) return zr_status_; \
  } while (false)

#define ZR_STATUS_CONCAT_INNER_(a, b) a##b
#define ZR_STATUS_CONCAT_(a, b) ZR_STATUS_CONCAT_INNER_(a, b)

#define ZR_ASSIGN_OR_RETURN(lhs, expr)                                      \
  ZR_ASSIGN_OR_RETURN_IMPL_(ZR_STATUS_CONCAT_(zr_statusor_, __LINE__), lhs, \
                            expr)

#define ZR_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)              \
  auto statusor = (expr);                                           \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) return statusor.status(); \
  lhs = std::move(statusor).value()

#endif  // ZERO3_CORE_UTIL_STATUS_MACROS_H_
