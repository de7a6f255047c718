// Grid sizing and the range-splitting launch used by every kernel of the library.
#include "npu_kernels/launch.h"

#include <thread>

namespace npu_kernels {

namespace {
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
}  // namespace

uint32_t grid_for(int64_t n, int64_t grain) {
  if (n <= 0) return 0;
  const int64_t by_work = (n + grain - 1) / std::max<int64_t>(grain, 1);
  const int64_t by_cores = static_cast<int64_t>(core_threads()) * 4;
  return static_cast<uint32_t>(std::max<int64_t>(1, std::min(by_work, by_cores)));
}

npu_sim::Status parallel_for(npu_sim::Stream stream, const char* name, int64_t n, int64_t grain,
                             std::function<void(int64_t, int64_t, const npu_sim::BlockContext&)> fn) {
  const uint32_t blocks = grid_for(n, grain);
  if (blocks == 0) return npu_sim::Status::kSuccess;
  return npu_sim::launch_kernel(stream, name, blocks, [n, blocks, fn = std::move(fn)](const npu_sim::BlockContext& ctx) {
    const int64_t begin = n * ctx.block_idx / blocks;
    const int64_t end = n * (ctx.block_idx + 1) / blocks;
    if (begin < end) fn(begin, end, ctx);
  });
}

}  // namespace npu_kernels
