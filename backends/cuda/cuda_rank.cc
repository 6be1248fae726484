// Copyright 2026 The zero3 Authors.

#include "backends/cuda/cuda_rank.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "backends/cuda/bootstrap_route.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_libraries.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/nccl_communicator.h"
#include "backends/cuda/rendezvous.h"
#include "core/runtime/pinned_memory.h"
#include "core/util/cpu_binding.h"
#include "core/util/cpu_list.h"
#include "core/util/status_macros.h"

namespace zero3 {
namespace cuda {
namespace {

// Serializes log lines of ranks that share a process.
absl::Mutex log_mu(absl::kConstInit);

// NVLink SHARP (multicast) stays off unless the user asks for it: see the
// file comment of cuda_rank.h. Must run before NCCL reads its environment,
// and before threads that might read the environment start.
void DefaultNvlsOff() { setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0); }

// Fewer CPUs than this for one rank: its host optimizer step and staging
// run on too few threads to keep up with a GPU (the launcher's mask, e.g.
// srun without --cpus-per-task, is the usual cause).
constexpr size_t kFewCpus = 4;

// Which interface reached rank 0, where NCCL might not take it (see
// bootstrap_route.h); nothing on rank 0, with the file rendezvous, or where
// the route cannot be found.
void NoteBootstrapRoute(const RankEnvironment& re, const EnvLookup& env,
                        std::ostream* log) {
  if (log == nullptr || re.rank == 0 || re.master_addr.empty()) return;
  const absl::StatusOr<Route> route = RouteTo(re.master_addr, re.master_port);
  if (!route.ok()) return;
  const std::string note = BootstrapNote(*route, env("NCCL_SOCKET_IFNAME"));
  if (note.empty()) return;
  absl::MutexLock lock(&log_mu);
  *log << note << "\n";
  log->flush();
}

// The pinned budget of this rank: the default share divided again among
// the `local_ranks` (learned) where they are more than assumed, said on the
// log; else as given.
int64_t SharePinnedBudget(const CudaRankOptions& options, int local_ranks,
                          int rank) {
  const int64_t assumed = std::max<int64_t>(options.assumed_local_ranks, 1);
  const int64_t share =
      PinnedShare(options.max_pinned_bytes, options.pinned_budget_is_default,
                  assumed, local_ranks);
  if (share == options.max_pinned_bytes) return share;
  if (options.log != nullptr) {
    absl::MutexLock lock(&log_mu);
    *options.log << "notice: rank " << rank << ": " << local_ranks
                 << " ranks run on this host, where the launcher's variables "
                    "said "
                 << assumed << "; each rank's default pinned budget is now "
                 << runtime::FormatBytes(share)
                 << " (zero3.max_pinned_bytes sets it)\n";
    options.log->flush();
  }
  return share;
}

absl::Status RankContext(const absl::Status& status, int rank, int world_size,
                         absl::string_view what) {
  if (status.ok()) return status;
  if (world_size == 1) return what.empty() ? status : Annotate(status, what);
  return Annotate(status, what.empty()
                              ? absl::StrCat("rank ", rank)
                              : absl::StrCat("rank ", rank, ": ", what));
}

absl::Status RunOneRank(const CudaRuntimeOptions& runtime_options,
                        const CudaRankOptions& options,
                        absl::string_view source,
                        const runtime::RankFunction& fn) {
  const int rank = runtime_options.rank;
  const int world = runtime_options.world_size;
  absl::StatusOr<std::unique_ptr<CudaRuntime>> rt =
      CudaRuntime::Create(runtime_options);
  if (!rt.ok()) {
    return RankContext(rt.status(), rank, world, "starting the cuda backend");
  }
  if (options.log != nullptr) {
    CudaDevice& d = (*rt)->cuda_device();
    absl::MutexLock lock(&log_mu);
    const std::vector<int> cpus = AffinityCpus();
    *options.log << "zero3: rank " << rank << " of " << world << " on GPU "
                 << d.ordinal() << " (" << d.name() << ", "
                 << runtime::FormatBytes(d.total_memory_bytes()) << ")"
                 << (source.empty() ? "" : absl::StrCat("; ", source))
                 << "; CPUs " << CpuListText(cpus) << "\n";
    if (cpus.size() < kFewCpus) {
      *options.log
          << "warning: rank " << rank << " may run on " << cpus.size()
          << (cpus.size() == 1 ? " CPU" : " CPUs")
          << " (its affinity mask), so its host optimizer step and copies "
             "run on as many threads; give each rank more cores (srun "
             "--cpus-per-task, mpirun --map-by ...:PE=N, or zero3 launch, "
             "which shares the node's cores among its ranks)\n";
    }
    options.log->flush();
  }
  absl::Status status = fn(**rt);
  if (!status.ok()) {
    // The other ranks may be waiting in a collective this rank will never
    // reach: abort rather than wait for them.
    (*rt)->Abort();
    return RankContext(status, rank, world, "");
  }
  return RankContext((*rt)->Shutdown(), rank, world, "shutting down");
}

}  // namespace

absl::Status StartOpTiming(runtime::Runtime& rt) {
  auto* cuda = dynamic_cast<CudaRuntime*>(&rt);
  if (cuda == nullptr) {
    return absl::InvalidArgumentError("op timing needs the cuda backend");
  }
  return cuda->cuda_device().StartOpTiming();
}

absl::StatusOr<std::vector<runtime::OpTiming>> TakeOpTimings(
    runtime::Runtime& rt) {
  auto* cuda = dynamic_cast<CudaRuntime*>(&rt);
  if (cuda == nullptr) {
    return absl::InvalidArgumentError("op timing needs the cuda backend");
  }
  return cuda->cuda_device().TakeOpTimings();
}

int VisibleCudaDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

std::vector<std::string> VisibleGpuBusIds() {
  std::vector<std::string> ids;
  const int count = VisibleCudaDevices();
  for (int i = 0; i < count; ++i) {
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), i) != cudaSuccess) {
      (void)cudaGetLastError();
      return {};
    }
    std::string id = bus;
    for (char& c : id) c = static_cast<char>(std::tolower(c));
    ids.push_back(std::move(id));
  }
  return ids;
}

bool CudaBackendBuilt() { return true; }

namespace {

// "13.0" from 13000; "12.8" from 12080.
std::string CudaVersionText(int v) {
  return absl::StrCat(v / 1000, ".", (v % 1000) / 10);
}

}  // namespace

std::vector<std::string> DescribeCudaBackend() {
  std::vector<std::string> lines = {
      absl::StrCat("CUDA backend: built with the CUDA runtime ",
                   CudaVersionText(CUDART_VERSION), " (linked statically)")};
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
    lines.push_back(
        absl::StrCat("CUDA driver: supports CUDA ", CudaVersionText(driver)));
  } else {
    (void)cudaGetLastError();
    lines.push_back("CUDA driver: not found (libcuda.so.1)");
  }
  std::vector<std::string> libraries = DescribeCudaLibraries();
  if (LoadCudaLibraries().ok()) {
    int major = 0, minor = 0, patch = 0, nccl = 0;
    if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
      absl::StrAppend(&libraries[1], ", version ", major, ".", minor, ".",
                      patch);
    }
    if (ncclGetVersion(&nccl) == ncclSuccess) {
      absl::StrAppend(&libraries[2], ", version ", nccl / 10000, ".",
                      (nccl / 100) % 100, ".", nccl % 100);
    }
  }
  lines.insert(lines.end(), libraries.begin(), libraries.end());
  lines.push_back(absl::StrCat("GPUs visible: ", VisibleCudaDevices()));
  return lines;
}

absl::Status RunCudaRank(const runtime::RankFunction& fn) {
  return RunCudaRank(CudaRankOptions(), fn);
}

absl::Status RunCudaRank(const CudaRankOptions& options,
                         const runtime::RankFunction& fn) {
  const EnvLookup env = options.env ? options.env : ProcessEnv();
  absl::StatusOr<RankEnvironment> re = ReadRankEnvironment(env);
  if (!re.ok()) return Annotate(re.status(), "cuda backend");
  ZR_RETURN_IF_ERROR(LoadCudaLibraries());
  DefaultNvlsOff();

  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    const absl::Status s = CudaStatus(error, "cudaGetDeviceCount");
    return absl::FailedPreconditionError(
        absl::StrCat(re->Describe(), ": no usable CUDA device: ", s.message(),
                     "; run on a GPU node, or use --backend sim"));
  }
  absl::StatusOr<int> device =
      ChooseDevice(re->local_rank, count, env("CUDA_VISIBLE_DEVICES"));
  if (!device.ok()) return Annotate(device.status(), re->Describe());
  ZR_CUDA_RETURN_IF_ERROR(cudaSetDevice(*device));

  std::string id;
  std::shared_ptr<PeerLinks> links;
  int local_ranks = 0;  // learned from the rendezvous; 0: not known
  if (re->rank == 0) {
    absl::StatusOr<std::string> made = NcclCommunicator::NewUniqueId();
    if (!made.ok()) return Annotate(made.status(), re->Describe());
    id = std::move(*made);
  }
  if (re->world_size > 1) {
    RendezvousConfig config;
    config.rank = re->rank;
    config.world_size = re->world_size;
    config.host = re->master_addr;
    config.port = re->master_port;
    config.file = re->rendezvous_file;
    config.job = re->job;
    config.timeout = re->rendezvous_timeout;
    absl::StatusOr<SharedFromRankZero> shared =
        ShareFromRankZeroLinked(config, id);
    if (!shared.ok()) return Annotate(shared.status(), re->Describe());
    id = std::move(shared->payload);
    links = std::move(shared->links);
    NoteBootstrapRoute(*re, env, options.log);
    local_ranks = RanksOnHostOf(shared->hosts, re->rank);
  }

  CudaRuntimeOptions runtime_options;
  runtime_options.device = *device;
  runtime_options.rank = re->rank;
  runtime_options.world_size = re->world_size;
  runtime_options.nccl_id = std::move(id);
  runtime_options.max_pinned_bytes =
      SharePinnedBudget(options, local_ranks, re->rank);
  runtime_options.pinned_fallback = options.pinned_fallback;
  runtime_options.collective_timeout = options.collective_timeout;
  runtime_options.peer_links = std::move(links);
  return RunOneRank(
      runtime_options, options,
      absl::StrCat("local rank ", re->local_rank, ", from ", re->source), fn);
}

namespace {

// Each in-process rank's share of the process's CPUs, as zero3 launch gives
// its processes (core/util/cpu_binding.h): rank r's from the NUMA node of
// GPU r where sysfs says. Otherwise every rank's host work (its optimizer
// step) would use every CPU, twice as many threads as there are with two
// ranks. Empty (ranks left unbound) with fewer cores than ranks.
std::vector<std::vector<int>> InProcessCpuSlices(int ranks) {
  std::vector<std::string> gpus = VisibleGpuBusIds();
  gpus.resize(std::min<size_t>(gpus.size(), ranks));
  std::vector<int> nodes = PciNumaNodes(gpus);
  nodes.resize(ranks, -1);
  return NumaCpuSlices(AllowedCpus(), nodes);
}

}  // namespace

absl::Status RunCudaRanksInProcess(int ranks, const CudaRankOptions& options,
                                   const runtime::RankFunction& fn) {
  if (ranks < 1) {
    return absl::InvalidArgumentError("need at least one rank");
  }
  ZR_RETURN_IF_ERROR(LoadCudaLibraries());
  DefaultNvlsOff();
  const int count = VisibleCudaDevices();
  if (count < ranks) {
    return absl::FailedPreconditionError(
        absl::StrCat(ranks, " ranks in one process need ", ranks,
                     " GPUs, one each; ", count, " visible"));
  }
  ZR_ASSIGN_OR_RETURN(std::string id, NcclCommunicator::NewUniqueId());
  auto options_for = [&](int r) {
    CudaRuntimeOptions o;
    o.device = r;
    o.rank = r;
    o.world_size = ranks;
    o.nccl_id = id;
    o.max_pinned_bytes = options.max_pinned_bytes;
    o.pinned_fallback = options.pinned_fallback;
    o.collective_timeout = options.collective_timeout;
    return o;
  };
  if (ranks == 1) return RunOneRank(options_for(0), options, "", fn);
  const std::vector<std::vector<int>> cpus = InProcessCpuSlices(ranks);
  std::vector<absl::Status> results(ranks);
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      if (!cpus.empty()) {
        results[r] = BindCallingThread(cpus[r]);
        if (!results[r].ok()) return;
      }
      results[r] = RunOneRank(options_for(r), options, "in-process", fn);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace cuda
}  // namespace zero3
