// Fake-quantization kernels (see npu_kernels/fake_quantize.h). Each variant repeats its CPU kernel's mixed
// arithmetic: per tensor, the code in the input's compute type (float, double for float64) and the result in float;
// per channel, the clamp and result in double; a floating zero point rounds with lrintf.
#include "npu_kernels/fake_quantize.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {

namespace {

constexpr int64_t kGrain = 1 << 14;

// CPU's float -> int64 conversion as x86 executes it (cvttsd2si): NaN and values out of range give INT64_MIN;
// written out, since the plain cast of those is undefined in C++.
template <typename A>
int64_t x86_int64(A v) {
  constexpr A kLimit = static_cast<A>(9223372036854775808.0);  // 2^63
  return v >= -kLimit && v < kLimit ? static_cast<int64_t>(v) : std::numeric_limits<int64_t>::min();
}

template <typename T>
void per_tensor(const FakeQuantArgs& a, const T* x, T* y, bool* m, int64_t b, int64_t e) {
  using A = acc_t<T>;  // what T * float computes in
  const float sc = a.scale_ptr ? *a.scale_ptr : a.scale;
  const int64_t zp = a.zero_point_ptr ? *a.zero_point_ptr : a.zero_point;
  if (a.enabled_ptr && *a.enabled_ptr == 0) {
    for (int64_t i = b; i < e; ++i) y[i] = x[i], m[i] = true;
    return;
  }
  const float inv = 1.0f / sc;
  for (int64_t i = b; i < e; ++i) {
    const A qf = static_cast<A>(zp) + std::nearbyint(static_cast<A>(x[i]) * static_cast<A>(inv));
    const double lo = static_cast<double>(a.quant_min), hi = static_cast<double>(a.quant_max);
    const auto q = static_cast<int64_t>(std::fmin(std::fmax(static_cast<double>(qf), lo), hi));
    y[i] = static_cast<T>(static_cast<float>(q - zp) * sc);
    m[i] = static_cast<A>(a.quant_min) <= qf && qf <= static_cast<A>(a.quant_max);
  }
}

template <typename T, typename Z>
void per_channel(const FakeQuantArgs& a, const T* x, T* y, bool* m, int64_t b, int64_t e) {
  using A = acc_t<T>;
  const Z* zps = static_cast<const Z*>(a.zero_points);
  const double lo = static_cast<double>(a.quant_min), hi = static_cast<double>(a.quant_max);
  for (int64_t i = b; i < e; ++i) {
    const int64_t c = (i / a.inner) % a.channels;
    const float sc = a.scales[c], inv = 1.0f / sc;
    const A xs = static_cast<A>(x[i]) * static_cast<A>(inv);
    int64_t q;
    double zp;
    if constexpr (std::is_same_v<Z, int32_t>) {
      q = x86_int64(static_cast<A>(zps[c]) + std::nearbyint(xs));
      zp = zps[c];
    } else {  // a floating zero point: Xq = round(x / scale + zero_point), as the affine quantizer
      const float z = static_cast<float>(zps[c]);
      q = std::lrintf(static_cast<float>(static_cast<A>(z) + xs));
      zp = z;
    }
    m[i] = a.quant_min <= q && q <= a.quant_max;
    y[i] = static_cast<T>((std::fmin(std::fmax(static_cast<double>(q), lo), hi) - zp) * static_cast<double>(sc));
  }
}

}  // namespace

npu_sim::Status fake_quantize(npu_sim::Stream stream, const FakeQuantArgs& a, const void* in, void* out, bool* mask) {
  if (a.n < 0 || (a.n > 0 && (!in || !out || !mask))) return npu_sim::Status::kInvalidValue;
  if (a.scales && (!a.zero_points || a.channels < 1 || a.inner < 1)) return npu_sim::Status::kInvalidValue;
  if (a.scales && a.zp_dtype != DType::kInt32 && a.zp_dtype != DType::kFloat32 && a.zp_dtype != DType::kFloat16) {
    return npu_sim::Status::kInvalidValue;
  }
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    return parallel_for(stream, "fake_quantize", a.n, kGrain,
                        [a, in, out, mask](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      const T* x = static_cast<const T*>(in);
      T* y = static_cast<T*>(out);
      if (!a.scales) per_tensor<T>(a, x, y, mask, b, e);
      else if (a.zp_dtype == DType::kInt32) per_channel<T, int32_t>(a, x, y, mask, b, e);
      else if (a.zp_dtype == DType::kFloat32) per_channel<T, float>(a, x, y, mask, b, e);
      else per_channel<T, Half>(a, x, y, mask, b, e);
      // Launch records: the elements (and per channel their scale and zero point) read; the values and the mask
      // written; ~7 Vector ops per element (scale, round, add, clamp twice, subtract, multiply) and 2 compares.
      constexpr int64_t ts = sizeof(T);
      detail::record_vec(ctx, (e - b) * (ts + (a.scales ? 8 : 0)), (e - b) * (ts + 1), 9 * (e - b));
    });
  });
}

}  // namespace npu_kernels
