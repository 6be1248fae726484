// Copyright 2026 The zero3 Authors.

#include "core/engine/checkpoint_manifest.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/kernels/dtype.h"
#include "core/model/presets.h"
#include "core/model/transformer.h"
#include "core/util/crc32c.h"
#include "core/util/regular_file.h"
#include "core/util/status_macros.h"
#include "core/util/text_proto.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/text_format.h"

namespace zero3 {
namespace engine {
namespace {

using config::JsonValue;

constexpr char kFormatName[] = "zero3-checkpoint";

absl::Status Bad(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("checkpoint manifest ", path, ": ", what));
}

// Reads members of one JSON object, naming the manifest and the key.
class Fields {
 public:
  Fields(const JsonValue& object, std::string path, std::string where)
      : object_(object), path_(std::move(path)), where_(std::move(where)) {}

  absl::StatusOr<const JsonValue*> Get(absl::string_view key,
                                       JsonValue::Kind kind) const {
    const JsonValue* v = object_.is_object() ? object_.Find(key) : nullptr;
    if (v == nullptr || v->kind() != kind) {
      return Bad(path_, absl::StrCat("'", where_, key, "' is missing or not ",
                                     JsonValue::KindName(kind)));
    }
    return v;
  }
  absl::StatusOr<int64_t> Int(absl::string_view key) const {
    ZR_ASSIGN_OR_RETURN(const JsonValue* v, Get(key, JsonValue::Kind::kNumber));
    if (!v->AsExactInt64().has_value()) {
      return Bad(path_, absl::StrCat("'", where_, key, "' is not an integer"));
    }
    return *v->AsExactInt64();
  }
  absl::StatusOr<std::string> String(absl::string_view key) const {
    ZR_ASSIGN_OR_RETURN(const JsonValue* v, Get(key, JsonValue::Kind::kString));
    return v->string_value();
  }

 private:
  const JsonValue& object_;
  std::string path_;
  std::string where_;
};

std::string SpecText(const model::ModelSpec& spec) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(spec, &text);
  return text;
}

JsonValue ParamsToJson(const std::vector<CheckpointParam>& params) {
  JsonValue list = JsonValue::Array();
  for (const CheckpointParam& p : params) {
    JsonValue o = JsonValue::Object();
    o.Set("name", JsonValue::String(p.name));
    o.Set("numel", JsonValue::Int(p.numel));
    o.Set("partition", JsonValue::Int(p.partition));
    o.Set("offset", JsonValue::Int(p.offset));
    list.Append(std::move(o));
  }
  return list;
}

JsonValue FilesToJson(const std::vector<CheckpointFile>& files) {
  JsonValue list = JsonValue::Array();
  for (const CheckpointFile& f : files) {
    JsonValue o = JsonValue::Object();
    o.Set("rank", JsonValue::Int(f.rank));
    o.Set("name", JsonValue::String(f.name));
    o.Set("bytes", JsonValue::Int(f.bytes));
    o.Set("crc32c", JsonValue::String(absl::StrFormat("%08x", f.crc32c)));
    list.Append(std::move(o));
  }
  return list;
}

absl::Status ParseParams(const JsonValue& list, const std::string& path,
                         CheckpointManifest* m) {
  for (const JsonValue& item : list.array()) {
    const Fields f(item, path, "layout.params[].");
    CheckpointParam p;
    ZR_ASSIGN_OR_RETURN(p.name, f.String("name"));
    ZR_ASSIGN_OR_RETURN(p.numel, f.Int("numel"));
    ZR_ASSIGN_OR_RETURN(p.partition, f.Int("partition"));
    ZR_ASSIGN_OR_RETURN(p.offset, f.Int("offset"));
    m->params.push_back(std::move(p));
  }
  return absl::OkStatus();
}

absl::Status ParseFiles(const JsonValue& list, const std::string& path,
                        CheckpointManifest* m) {
  for (const JsonValue& item : list.array()) {
    const Fields f(item, path, "files[].");
    CheckpointFile file;
    ZR_ASSIGN_OR_RETURN(const int64_t rank, f.Int("rank"));
    file.rank = static_cast<int>(rank);
    ZR_ASSIGN_OR_RETURN(file.name, f.String("name"));
    ZR_ASSIGN_OR_RETURN(file.bytes, f.Int("bytes"));
    ZR_ASSIGN_OR_RETURN(const std::string crc, f.String("crc32c"));
    char* end = nullptr;
    const unsigned long value = std::strtoul(crc.c_str(), &end, 16);
    file.crc32c = static_cast<uint32_t>(value);
    if (crc.size() != 8 || end != crc.c_str() + crc.size()) {
      return Bad(path, absl::StrCat("files[].crc32c '", crc, "' is not hex"));
    }
    if (file.name.find('/') != std::string::npos) {
      return Bad(path, absl::StrCat("file name '", file.name,
                                    "' is not a name in the step directory"));
    }
    m->files.push_back(std::move(file));
  }
  if (static_cast<int>(m->files.size()) != m->world_size) {
    return Bad(path, absl::StrCat(m->files.size(), " files for world size ",
                                  m->world_size));
  }
  for (int r = 0; r < m->world_size; ++r) {
    if (m->files[r].rank != r) {
      return Bad(path, absl::StrCat("files[", r, "] is rank ", m->files[r].rank,
                                    ", expected ", r));
    }
  }
  return absl::OkStatus();
}

// The first field of ModelSpec whose value differs, as "name: a vs b".
std::string SpecDifference(const model::ModelSpec& saved,
                           const model::ModelSpec& now) {
  const google::protobuf::Descriptor* d = model::ModelSpec::descriptor();
  const google::protobuf::Reflection* r = model::ModelSpec::GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (f->is_repeated()) continue;
    std::string a, b;
    google::protobuf::TextFormat::PrintFieldValueToString(saved, f, -1, &a);
    google::protobuf::TextFormat::PrintFieldValueToString(now, f, -1, &b);
    if (a != b || r->HasField(saved, f) != r->HasField(now, f)) {
      return absl::StrCat(f->name(), " ", a, " in the checkpoint, ", b,
                          " in this run");
    }
  }
  return "a repeated field differs";
}

// Bounds that keep every product of the manifest's counts within int64.
constexpr int64_t kMaxWorld = int64_t{1} << 20;
constexpr int64_t kMaxCount = int64_t{1} << 40;

absl::Status InRange(const std::string& path, absl::string_view key,
                     int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return Bad(path, absl::StrCat("'", key, "' is ", value, ", outside [", lo,
                                ", ", hi, "]"));
}

// The layout: each parameter's partition within every rank's tensors, large
// enough for its elements over the ranks, and no two overlapping.
absl::Status CheckLayout(const CheckpointManifest& m, const std::string& path) {
  std::vector<std::pair<int64_t, int64_t>> spans;  // [offset, end)
  for (size_t i = 0; i < m.params.size(); ++i) {
    const CheckpointParam& p = m.params[i];
    const std::string at =
        absl::StrCat("layout.params[", i, "] (", p.name, ")");
    ZR_RETURN_IF_ERROR(
        InRange(path, at + ".numel", p.numel, 0, kMaxCount * kMaxWorld));
    ZR_RETURN_IF_ERROR(
        InRange(path, at + ".partition", p.partition, 1, m.partition_elements));
    ZR_RETURN_IF_ERROR(InRange(path, at + ".offset", p.offset, 0,
                               m.partition_elements - p.partition));
    if (p.numel > p.partition * m.world_size) {
      return Bad(
          path,
          absl::StrCat(at, ": ", p.numel, " elements do not fit partitions of ",
                       p.partition, " on ", m.world_size, " ranks"));
    }
    spans.push_back({p.offset, p.offset + p.partition});
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].first < spans[i - 1].second) {
      return Bad(path, absl::StrCat("layout.params overlap at element ",
                                    spans[i].first));
    }
  }
  return absl::OkStatus();
}

// Every field's range and the fields' consistency, so that nothing read
// from a manifest can take a reader out of bounds.
absl::Status CheckManifest(const CheckpointManifest& m,
                           const std::string& path) {
  ZR_RETURN_IF_ERROR(InRange(path, "step", m.step, 0, kMaxCount));
  ZR_RETURN_IF_ERROR(InRange(path, "batch.micro_batch", m.micro_batch, 1,
                             kMaxCount / kMaxWorld));
  ZR_RETURN_IF_ERROR(InRange(path, "batch.seq", m.seq, 1, kMaxCount));
  ZR_RETURN_IF_ERROR(InRange(path, "batch.accumulation", m.accumulation, 1,
                             kMaxCount / kMaxWorld));
  ZR_RETURN_IF_ERROR(InRange(path, "layout.partition_elements",
                             m.partition_elements, 0, kMaxCount));
  ZR_RETURN_IF_ERROR(InRange(path, "data_position.epoch", m.data_position.epoch,
                             0, kMaxCount));
  ZR_RETURN_IF_ERROR(InRange(path, "data_position.index", m.data_position.index,
                             0, kMaxCount));
  if (m.dtype != "f32" && m.dtype != "bf16" && m.dtype != "f16") {
    return Bad(
        path, absl::StrCat("'dtype' is '", m.dtype, "', not f32, bf16 or f16"));
  }
  const absl::Status spec = model::ValidateModelSpec(m.spec);
  if (!spec.ok()) {
    return Bad(path, absl::StrCat("'model': ", spec.message()));
  }
  // Each shard holds the master and both moments, partition_elements
  // values each, fp32 or (bf16 states) bf16: the files bound what a reader
  // allocates.
  for (const CheckpointFile& f : m.files) {
    ZR_RETURN_IF_ERROR(InRange(path, "files[].bytes", f.bytes,
                               6 * m.partition_elements,
                               std::numeric_limits<int64_t>::max()));
  }
  const std::vector<model::ParamInfo> params = model::ModelParams(m.spec);
  if (params.size() != m.params.size()) {
    return Bad(path,
               absl::StrCat("'layout.params' lists ", m.params.size(),
                            " parameters; its model has ", params.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (m.params[i].name != params[i].name ||
        m.params[i].numel != params[i].numel()) {
      return Bad(path, absl::StrCat("layout.params[", i, "] is ",
                                    m.params[i].name, " of ", m.params[i].numel,
                                    " elements; its model's is ",
                                    params[i].name, " of ", params[i].numel()));
    }
  }
  return CheckLayout(m, path);
}

}  // namespace

std::string ShardFileName(int rank) {
  return absl::StrFormat("rank_%05d.safetensors", rank);
}

std::string ManifestToJson(const CheckpointManifest& m) {
  JsonValue o = JsonValue::Object();
  o.Set("format", JsonValue::String(kFormatName));
  o.Set("format_version", JsonValue::Int(m.format_version));
  o.Set("step", JsonValue::Int(m.step));
  o.Set("world_size", JsonValue::Int(m.world_size));
  o.Set("model", JsonValue::String(SpecText(m.spec)));
  o.Set("dtype", JsonValue::String(m.dtype));
  JsonValue batch = JsonValue::Object();
  batch.Set("micro_batch", JsonValue::Int(m.micro_batch));
  batch.Set("seq", JsonValue::Int(m.seq));
  batch.Set("accumulation", JsonValue::Int(m.accumulation));
  o.Set("batch", std::move(batch));
  JsonValue layout = JsonValue::Object();
  layout.Set("partition_elements", JsonValue::Int(m.partition_elements));
  layout.Set("params", ParamsToJson(m.params));
  o.Set("layout", std::move(layout));
  JsonValue data = JsonValue::Object();
  data.Set("epoch", JsonValue::Int(m.data_position.epoch));
  data.Set("index", JsonValue::Int(m.data_position.index));
  o.Set("data_position", std::move(data));
  o.Set("config", m.config);
  o.Set("files", FilesToJson(m.files));
  return WriteJson(o) + "\n";
}

absl::StatusOr<CheckpointManifest> ParseManifest(absl::string_view text,
                                                 const std::string& path) {
  absl::StatusOr<JsonValue> tree = config::ParseJson(text);
  if (!tree.ok()) return Bad(path, tree.status().message());
  const Fields top(*tree, path, "");
  CheckpointManifest m;
  ZR_ASSIGN_OR_RETURN(const std::string format, top.String("format"));
  if (format != kFormatName) {
    return Bad(path, absl::StrCat("format '", format, "', expected '",
                                  kFormatName, "'"));
  }
  ZR_ASSIGN_OR_RETURN(const int64_t version, top.Int("format_version"));
  if (version < 1 || version > kCheckpointFormatVersion) {
    return Bad(path,
               absl::StrCat("format version ", version,
                            "; this zero3 reads versions 1 to ",
                            kCheckpointFormatVersion, ": use a newer zero3"));
  }
  m.format_version = static_cast<int>(version);
  ZR_ASSIGN_OR_RETURN(m.step, top.Int("step"));
  ZR_ASSIGN_OR_RETURN(const int64_t world, top.Int("world_size"));
  ZR_RETURN_IF_ERROR(InRange(path, "world_size", world, 1, kMaxWorld));
  m.world_size = static_cast<int>(world);
  ZR_ASSIGN_OR_RETURN(const std::string spec, top.String("model"));
  const absl::Status parsed = ParseTextProto(spec, "model", &m.spec);
  if (!parsed.ok()) {
    return Bad(path, absl::StrCat("'model' is not a text-format ModelSpec (",
                                  parsed.message(), ")"));
  }
  ZR_ASSIGN_OR_RETURN(m.dtype, top.String("dtype"));
  ZR_ASSIGN_OR_RETURN(const JsonValue* batch,
                      top.Get("batch", JsonValue::Kind::kObject));
  const Fields b(*batch, path, "batch.");
  ZR_ASSIGN_OR_RETURN(m.micro_batch, b.Int("micro_batch"));
  ZR_ASSIGN_OR_RETURN(m.seq, b.Int("seq"));
  ZR_ASSIGN_OR_RETURN(m.accumulation, b.Int("accumulation"));
  ZR_ASSIGN_OR_RETURN(const JsonValue* layout,
                      top.Get("layout", JsonValue::Kind::kObject));
  const Fields l(*layout, path, "layout.");
  ZR_ASSIGN_OR_RETURN(m.partition_elements, l.Int("partition_elements"));
  ZR_ASSIGN_OR_RETURN(const JsonValue* params,
                      l.Get("params", JsonValue::Kind::kArray));
  ZR_RETURN_IF_ERROR(ParseParams(*params, path, &m));
  ZR_ASSIGN_OR_RETURN(const JsonValue* data,
                      top.Get("data_position", JsonValue::Kind::kObject));
  const Fields d(*data, path, "data_position.");
  ZR_ASSIGN_OR_RETURN(m.data_position.epoch, d.Int("epoch"));
  ZR_ASSIGN_OR_RETURN(m.data_position.index, d.Int("index"));
  ZR_ASSIGN_OR_RETURN(const JsonValue* config,
                      top.Get("config", JsonValue::Kind::kObject));
  m.config = *config;
  ZR_ASSIGN_OR_RETURN(const JsonValue* files,
                      top.Get("files", JsonValue::Kind::kArray));
  ZR_RETURN_IF_ERROR(ParseFiles(*files, path, &m));
  ZR_RETURN_IF_ERROR(CheckManifest(m, path));
  return m;
}

absl::StatusOr<CheckpointManifest> ReadManifest(const std::string& step_dir) {
  const std::string path = absl::StrCat(step_dir, "/", kManifestName);
  const absl::Status regular = CheckRegularFile(path);
  if (absl::IsInvalidArgument(regular)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint manifest: ", regular.message()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read checkpoint manifest ",
                                            path, ": ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseManifest(text.str(), path);
}

std::vector<std::pair<int64_t, std::string>> CompleteCheckpoints(
    const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return found;
  while (const dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    int64_t step = 0;
    if (!absl::StartsWith(name, kStepDirPrefix) ||
        !absl::SimpleAtoi(name.substr(std::strlen(kStepDirPrefix)), &step) ||
        name != absl::StrCat(kStepDirPrefix, step)) {
      continue;
    }
    struct stat st;
    if (stat(absl::StrCat(dir, "/", name, "/", kManifestName).c_str(), &st) ==
        0) {
      found.emplace_back(step, name);
    }
  }
  closedir(d);
  std::sort(found.rbegin(), found.rend());
  return found;
}

absl::StatusOr<std::string> ResolveCheckpoint(const std::string& path) {
  std::string dir(absl::StripSuffix(path, "/"));
  if (dir.empty()) dir = "/";
  struct stat st;
  if (stat(absl::StrCat(dir, "/", kManifestName).c_str(), &st) == 0) {
    return dir;
  }
  const std::string latest = absl::StrCat(dir, "/", kLatestName);
  // Not a regular file: as if there were none.
  std::ifstream in;
  if (CheckRegularFile(latest).ok()) in.open(latest);
  std::string name;
  const bool has_latest = in && std::getline(in, name) && !name.empty();
  // A save cut short after its manifest, before `latest`: a newer complete
  // checkpoint than the one `latest` names.
  const auto complete = CompleteCheckpoints(dir);
  int64_t latest_step = -1;
  if (has_latest && absl::StartsWith(name, kStepDirPrefix)) {
    absl::SimpleAtoi(name.substr(std::strlen(kStepDirPrefix)), &latest_step);
  }
  if (!complete.empty() && complete[0].first > latest_step) {
    return absl::StrCat(dir, "/", complete[0].second);
  }
  if (!has_latest) {
    return absl::NotFoundError(
        absl::StrCat("no checkpoint at ", path, ": neither ", latest, " nor ",
                     dir, "/", kManifestName,
                     " can be read (--resume takes a --save directory or "
                     "one of its step_<N> directories)"));
  }
  if (name.find('/') != std::string::npos || name == "." || name == "..") {
    return absl::InvalidArgumentError(absl::StrCat(
        latest, " names '", name, "', not a step directory of ", dir));
  }
  return absl::StrCat(dir, "/", name);
}

absl::StatusOr<io::FileDigest> ReadFileDigest(
    const std::string& path,
    const std::function<void(int64_t, absl::string_view)>& piece) {
  absl::StatusOr<int> opened = OpenRegularFile(path);
  if (!opened.ok()) {
    return absl::Status(opened.status().code(),
                        absl::StrCat("cannot read checkpoint file: ",
                                     opened.status().message()));
  }
  const int fd = *opened;
  std::string buffer(int64_t{4} << 20, '\0');
  io::FileDigest digest;
  while (true) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("cannot read checkpoint file ",
                                              path, ": ", std::strerror(e)));
    }
    if (n == 0) break;
    const absl::string_view bytes(buffer.data(), n);
    digest.crc32c = ExtendCrc32c(digest.crc32c, bytes);
    if (piece) piece(digest.bytes, bytes);
    digest.bytes += n;
  }
  close(fd);
  return digest;
}

absl::Status CheckFileDigest(const std::string& path,
                             const io::FileDigest& digest,
                             const CheckpointFile& f) {
  if (digest.bytes != f.bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint file ", path, " has ", digest.bytes,
        " bytes; the manifest records ", f.bytes, " (truncated or replaced)"));
  }
  if (digest.crc32c != f.crc32c) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "checkpoint file %s is corrupted: CRC-32C %08x, the manifest "
        "records %08x",
        path, digest.crc32c, f.crc32c));
  }
  return absl::OkStatus();
}

absl::Status VerifyCheckpointFiles(const std::string& step_dir,
                                   const CheckpointManifest& manifest) {
  for (const CheckpointFile& f : manifest.files) {
    const std::string path = absl::StrCat(step_dir, "/", f.name);
    const absl::StatusOr<io::FileDigest> digest = ReadFileDigest(path);
    if (!digest.ok()) {
      return absl::InvalidArgumentError(digest.status().message());
    }
    ZR_RETURN_IF_ERROR(CheckFileDigest(path, *digest, f));
  }
  return absl::OkStatus();
}

absl::Status CheckResumable(const CheckpointManifest& m,
                            const std::string& path,
                            const model::ModelSpec& spec,
                            const zero::ZeroOptions& options, int world_size) {
  if (SpecText(m.spec) != SpecText(spec)) {
    return Bad(path,
               absl::StrCat("another model: ", SpecDifference(m.spec, spec)));
  }
  if (m.seq != options.seq) {
    return Bad(path, absl::StrCat("saved with seq ", m.seq, ", this run has ",
                                  options.seq));
  }
  // Another number of ranks, micro-batch or accumulation is fine when the
  // global batch is the same: each rank reads the ranges it needs.
  const int64_t saved = m.micro_batch * m.accumulation * m.world_size;
  const int64_t now = static_cast<int64_t>(options.micro_batch) *
                      options.accumulation * world_size;
  if (saved != now) {
    return Bad(
        path,
        absl::StrFormat("saved with a global batch of %d sequences (%d ranks "
                        "x micro-batch %d x accumulation %d), this run has "
                        "%d (%d x %d x %d): keep the global batch to resume",
                        saved, m.world_size, m.micro_batch, m.accumulation, now,
                        world_size, options.micro_batch, options.accumulation));
  }
  return absl::OkStatus();
}

}  // namespace engine
}  // namespace zero3
