// Copyright 2026 The zero3 Authors.

#include "core/runtime/drive_file.h"

#include <utility>

#include "core/util/status_macros.h"

namespace zero3 {
namespace runtime {
namespace {

class RealDriveFile final : public DriveFile {
 public:
  explicit RealDriveFile(std::unique_ptr<SwapFile> file)
      : file_(std::move(file)) {}
  std::string path() const override { return file_->path(); }
  bool direct() const override { return file_->direct(); }
  absl::StatusOr<int64_t> Read(int64_t offset, const BufferSlice& into,
                               absl::string_view) override {
    return file_->Read(offset, into.data(), into.bytes());
  }
  absl::StatusOr<int64_t> Write(int64_t offset, const BufferSlice& from,
                                absl::string_view) override {
    return file_->Write(offset, from.data(), from.bytes());
  }
  absl::Status Wait(int64_t ticket) override { return file_->Wait(ticket); }
  absl::Status WaitAll() override { return file_->WaitAll(); }
  void InjectFault(bool write, int nth, int error) override {
    file_->InjectFault(write, nth, error);
  }

 private:
  std::unique_ptr<SwapFile> file_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DriveFile>> OpenRealDriveFile(
    const DriveFileOptions& options) {
  ZR_ASSIGN_OR_RETURN(
      std::unique_ptr<SwapFile> file,
      SwapFile::Create(options.dir, options.name, options.bytes, options.swap));
  return std::unique_ptr<DriveFile>(
      std::make_unique<RealDriveFile>(std::move(file)));
}

}  // namespace runtime
}  // namespace zero3
