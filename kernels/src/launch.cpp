// Grid sizing for the range-splitting launch (parallel_for, launch.h) used by every kernel of the library.
#include "npu_kernels/launch.h"

#include <thread>

namespace npu_kernels {

int core_threads() {
  static const int threads = [] {
    npu_sim::DeviceProperties props{};
    if (npu_sim::get_device_properties(0, &props) == npu_sim::Status::kSuccess && props.core_threads > 0) {
      return props.core_threads;
    }
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return threads;
}

uint32_t grid_for(int64_t n, int64_t grain) {
  if (n <= 0) return 0;
  const int64_t by_work = (n + grain - 1) / std::max<int64_t>(grain, 1);
  const int64_t by_cores = static_cast<int64_t>(core_threads()) * 4;
  return static_cast<uint32_t>(std::max<int64_t>(1, std::min(by_work, by_cores)));
}

}  // namespace npu_kernels
