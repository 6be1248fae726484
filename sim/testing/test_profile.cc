// Copyright 2026 The zero3 Authors.

#include "sim/testing/test_profile.h"

#include "core/util/check.h"
#include "google/protobuf/text_format.h"

namespace zero3 {
namespace sim {

HardwareProfile TestProfile() {
  HardwareProfile p;
  ZR_CHECK(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        name: "test"
        gpu {
          name: "test gpu"
          memory_gib: 1
          peak_bf16_tflops: 1
          peak_fp32_tflops: 1000000
          hbm_bandwidth_gbps: 1
          hbm_efficiency: 1
          matmul_efficiency { size: 1 value: 1 }
          attention_efficiency: 1
          min_kernel_us: 0
        }
        host_link {
          pinned_h2d_gbps: 1
          pinned_d2h_gbps: 1
          pageable_h2d_gbps: 0.25
          pageable_d2h_gbps: 0.5
          pageable_h2d_async_max_bytes: 1024
          staging_gbps: 1
          copy_latency_us: 0
          bidirectional_efficiency: 1
        }
        host {
          cores_per_rank: 4
          memory_bandwidth_gbps_per_rank: 2
          memory_bandwidth_gbps_per_thread: 1
          gflops_per_core: 1
          pin_gbps: 1
          launch_us: 5
          copy_call_us: 2
          event_call_us: 1
          collective_call_us: 5
          alloc_call_us: 10
          host_task_overhead_us: 0
          nvme_read_gbps_per_node: 0.5
          nvme_write_gbps_per_node: 0.25
          nvme_request_us: 1
        }
        fabric {
          allgather_busbw { size: 1 value: 1 }
          reduce_scatter_busbw { size: 1 value: 1 }
          base_latency_us: 0
          step_latency_us: 1
          gpus_per_node: 8
        }
      )pb",
      &p));
  return p;
}

}  // namespace sim
}  // namespace zero3
