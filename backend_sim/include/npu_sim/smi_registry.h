// The host registry npu-smi reads: each process using the runtime keeps one file describing its devices'
// memory and kernel time, in a fixed binary layout, current at every moment (atomics in a shared mapping).
// The layout below is a contract with torch_npu_sim/smi.py (the `npu-smi` command); bump kSmiVersion when
// it changes.
//
// File: $NPU_SIM_SMI_DIR (default /dev/shm) / npusim-smi-<pid>, created at the runtime's first use of a
// device, removed at normal exit. A crashed process leaves its file behind: readers check that <pid> is
// alive and was started at `start_ticks` (so a reused pid is not taken for it) and delete stale files, and
// so does each process when it creates its own file.
#pragma once

#include <atomic>
#include <cstdint>

namespace npu_sim {

constexpr std::uint32_t kSmiVersion = 1;
constexpr int kSmiMaxDevices = 64;

struct SmiDevice {                       // one visible device of the process; 64 bytes
  std::int32_t physical_id;              // the NPU it is (ASCEND_RT_VISIBLE_DEVICES maps ordinals to these)
  std::int32_t reserved0;
  std::uint64_t hbm_capacity;            // bytes
  std::atomic<std::uint64_t> hbm_used;   // bytes this process holds on it (device mallocs)
  std::atomic<std::uint64_t> busy_ns;    // kernel time before busy_since (see device_busy_time)
  std::atomic<std::uint64_t> busy_since; // CLOCK_MONOTONIC ns when `running` last became > 0
  std::atomic<std::int64_t> running;     // kernels of the process running on it now
  std::uint64_t reserved1[2];
};

struct SmiHeader {                       // 128 bytes, then device_count SmiDevice entries
  char magic[8];                         // "NPUSMI\0\0"
  std::uint32_t version;                 // kSmiVersion
  std::int32_t pid;
  std::uint64_t start_ticks;             // /proc/<pid>/stat field 22 (process start time, clock ticks)
  std::int32_t device_count;
  std::int32_t reserved0;
  char process_name[32];                 // /proc/self/comm
  std::uint64_t reserved1[8];
};

static_assert(sizeof(SmiDevice) == 64, "SmiDevice layout is a file format");
static_assert(sizeof(SmiHeader) == 128, "SmiHeader layout is a file format");

}  // namespace npu_sim
