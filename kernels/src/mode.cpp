// mode kernel (see npu_kernels/mode.h): one slice at a time per block, its (value, index) pairs sorted by value
// with std::sort and the runs scanned as CPU's mode_kernel_impl does, so values and indices match CPU exactly.
// Slices are split over blocks (each writes only its own outputs: deterministic, no atomics).
#include "npu_kernels/mode.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "npu_kernels/launch.h"
#include "real_dispatch.h"
#include "traffic.h"

namespace npu_kernels {
namespace {

using Status = npu_sim::Status;

// Comparisons of the element type as CPU makes them: fp16/bf16 through float (c10::Half's operators), the
// others natively.
template <typename T>
auto cmp_value(T v) {
  if constexpr (is_reduced_float_v<T>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}

int64_t ceil_log2(int64_t n) {
  int64_t l = 0;
  while ((int64_t{1} << l) < n) ++l;
  return l;
}

}  // namespace

Status mode(npu_sim::Stream stream, const ModeArgs& a, const void* input, void* values, int64_t* indices) {
  if (a.outer < 0 || a.size < 0 || a.inner < 0) return Status::kInvalidValue;
  const int64_t slices = a.outer * a.inner;
  if (slices == 0) return detail::dispatch_real(a.dtype, [](auto) { return Status::kSuccess; });
  if (a.size == 0 || !input || !values || !indices) return Status::kInvalidValue;
  return detail::dispatch_real(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t grain = std::max<int64_t>(1, 4096 / a.size);
    return parallel_for(stream, "mode", slices, grain, [=](int64_t s0, int64_t s1, const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(input);
      T* vals = static_cast<T*>(values);
      const int64_t n = a.size, inner = a.inner;
      std::vector<std::pair<T, int64_t>> el(static_cast<size_t>(n));
      for (int64_t s = s0; s < s1; ++s) {
        const T* src = x + (s / inner) * n * inner + s % inner;
        for (int64_t k = 0; k < n; ++k) el[static_cast<size_t>(k)] = {src[k * inner], k};
        std::sort(el.begin(), el.end(),
                  [](const auto& l, const auto& r) { return cmp_value(l.first) < cmp_value(r.first); });
        // The first run (in sorted order) strictly longer than all before it; a run ends where the next value
        // differs (`!=`, so every NaN ends its own run).
        size_t best = 0;
        int64_t run = 0, best_len = 0;
        for (size_t k = 0; k < el.size(); ++k) {
          ++run;
          if (k + 1 == el.size() || cmp_value(el[k].first) != cmp_value(el[k + 1].first)) {
            if (run > best_len) {
              best = k;
              best_len = run;
            }
            run = 0;
          }
        }
        vals[s] = el[best].first;
        indices[s] = el[best].second;
      }
      // Launch records: every slice read once, one value and one int64 index written per slice; Vector ops
      // per slice: the sort's ~n log2 n comparisons and the n-step run scan.
      const int64_t es = static_cast<int64_t>(sizeof(T)), cnt = s1 - s0;
      detail::record_vec(ctx, cnt * n * es, cnt * (es + 8), cnt * n * (ceil_log2(n) + 1));
    });
  });
}

}  // namespace npu_kernels
