// Copyright 2026 The zero3 Authors.

#include "core/runtime/kernel_call.h"

#include <type_traits>

namespace zero3 {
namespace runtime {
namespace {

struct AccessList {
  std::vector<Access> list;
  void R(const TensorRef& t) { R(t.slice); }
  void W(const TensorRef& t) { W(t.slice); }
  void RW(const TensorRef& t) {
    R(t);
    W(t);
  }
  void R(const BufferSlice& s) { list.push_back({s, false}); }
  void W(const BufferSlice& s) { list.push_back({s, true}); }
};

}  // namespace

absl::string_view KernelCall::OpName() const {
  return std::visit([](const auto& o) { return o.kName; }, op);
}

std::vector<Access> KernelCall::Accesses() const {
  AccessList a;
  std::visit([&a](const auto& o) { o.Access(a); }, op);
  return std::move(a.list);
}

}  // namespace runtime
}  // namespace zero3
