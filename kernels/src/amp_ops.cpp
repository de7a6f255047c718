// Gradient-scaling kernels (see npu_kernels/amp.h).
#include "npu_kernels/amp.h"

#include <cmath>
#include <cstring>

#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {

namespace {
// Several blocks may report a non-finite value at once; they all store the same bits atomically.
void flag_found(float* found_inf) {
  const float one = 1.0f;
  uint32_t bits;
  std::memcpy(&bits, &one, sizeof bits);
  __atomic_store_n(reinterpret_cast<uint32_t*>(found_inf), bits, __ATOMIC_RELAXED);
}
}  // namespace

npu_sim::Status amp_unscale(npu_sim::Stream stream, const TensorDesc& grad, float* found_inf, const float* inv_scale) {
  const bool contiguous = grad.is_contiguous();
  return parallel_for(stream, "amp_unscale", grad.numel(), 1 << 15,
                      [grad, found_inf, inv_scale, contiguous](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        // Launch records: inv_scale read once per block, every grad element read and written
                        // back, found_inf written by a block that saw a non-finite value; 2 Vector ops per
                        // element (the finite check, the multiply).
                        const int64_t es = static_cast<int64_t>(dtype_size(grad.dtype));
                        const float inv = *inv_scale;
                        bool bad = false;
                        dispatch_dtype(grad.dtype, [&](auto tag) {
                          using T = decltype(tag);
                          if constexpr (std::is_floating_point_v<T> || is_reduced_float_v<T>) {
                            using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
                            T* data = static_cast<T*>(grad.data);
                            auto step = [&](T& v) {
                              const C x = static_cast<C>(v);
                              bad |= !std::isfinite(x);
                              v = static_cast<T>(x * static_cast<C>(inv));
                            };
                            if (contiguous) {
                              for (int64_t i = b; i < e; ++i) step(data[i]);
                            } else {
                              StridedWalker w(grad, b);
                              for (int64_t i = b; i < e; ++i, w.next()) step(data[w.offset()]);
                            }
                          } else {
                            throw npu_sim::KernelError("amp unscale: the gradients must be floating point");
                          }
                        });
                        if (bad) flag_found(found_inf);
                        detail::record_vec(ctx, int64_t{sizeof(float)} + (e - b) * es,
                                           (e - b) * es + (bad ? int64_t{sizeof(float)} : 0), 2 * (e - b));
                      });
}

npu_sim::Status amp_update_scale(npu_sim::Stream stream, float* scale, int32_t* growth_tracker, const float* found_inf,
                                 double growth_factor, double backoff_factor, int64_t growth_interval) {
  // Launch records: found_inf and the int32 tracker (and the scale when it changes) read, the tracker
  // and a changed scale written; 1 or 2 Vector ops.
  return npu_sim::launch_kernel(stream, "amp_update_scale", 1, [=](const npu_sim::BlockContext& ctx) {
    constexpr int64_t f = sizeof(float), i = sizeof(int32_t);
    if (*found_inf != 0.0f) {
      *scale = static_cast<float>(*scale * backoff_factor);
      *growth_tracker = 0;
      detail::record_vec(ctx, 2 * f, f + i, 1);
      return;
    }
    const int32_t successful = *growth_tracker + 1;
    if (successful == growth_interval) {
      const float grown = static_cast<float>(*scale * growth_factor);
      const bool finite = std::isfinite(grown);
      if (finite) *scale = grown;
      *growth_tracker = 0;
      detail::record_vec(ctx, 2 * f + i, (finite ? f : 0) + i, 2);
    } else {
      *growth_tracker = successful;
      detail::record_vec(ctx, f + i, i, 1);
    }
  });
}

}  // namespace npu_kernels
