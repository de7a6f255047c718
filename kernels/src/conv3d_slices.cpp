// 3-D convolution in float64, which oneDNN does not serve, as sums of the tiled 2-D passes (conv.cpp) over
// depth slices: each kernel depth kd pairs output depth od with input depth
// od * stride - pad + kd * dilation, so a pass over one kd is a 2-D convolution whose batch runs along depth
// (for one image) or along the images (for one depth), accumulated into a tensor first set to the bias or 0.
#include <algorithm>
#include <array>

#include "dnnl_conv.h"
#include "npu_kernels/conv.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {
namespace detail {
namespace {

// Output depths [lo, hi) whose input depth od * s - p + kd * d lies in [0, in).
void valid_depths(const Conv3dArgs& a, int64_t kd, int64_t* lo, int64_t* hi) {
  const int64_t s = a.stride[0], off = kd * a.dilation[0] - a.pad[0];
  auto floor_div = [](int64_t n, int64_t q) { return n >= 0 ? n / q : -((-n + q - 1) / q); };
  *lo = std::max<int64_t>(0, -floor_div(off, s));  // ceil(-off / s)
  *hi = std::min<int64_t>(a.out[0], floor_div(a.in[0] - 1 - off, s) + 1);
}

// The 2-D geometry of kernel depth kd (H, W of the 3-D one; no bias; accumulating); batch and the
// operands' bases and batch strides are set per pass.
Conv2dArgs slice_args(const Conv3dArgs& a, int64_t kd, std::size_t elem) {
  Conv2dArgs c;
  c.dtype = a.dtype;
  c.in_channels = a.in_channels, c.out_channels = a.out_channels, c.groups = a.groups;
  c.in_h = a.in[1], c.in_w = a.in[2], c.out_h = a.out[1], c.out_w = a.out[2];
  c.kernel_h = a.kernel[1], c.kernel_w = a.kernel[2];
  c.stride_h = a.stride[1], c.stride_w = a.stride[2], c.pad_h = a.pad[1], c.pad_w = a.pad[2];
  c.dilation_h = a.dilation[1], c.dilation_w = a.dilation[2];
  const int64_t xs[4] = {0, a.x_strides[1], a.x_strides[3], a.x_strides[4]};
  const int64_t ws[4] = {a.w_strides[0], a.w_strides[1], a.w_strides[3], a.w_strides[4]};
  const int64_t ys[4] = {0, a.y_strides[1], a.y_strides[3], a.y_strides[4]};
  std::copy(xs, xs + 4, c.x_strides);
  std::copy(ws, ws + 4, c.w_strides);
  std::copy(ys, ys + 4, c.y_strides);
  c.w = static_cast<char*>(a.w) + kd * a.w_strides[2] * static_cast<int64_t>(elem);
  c.accumulate = true;
  return c;
}

// Runs pass(c) for every (kd, image or depth) slice: batch along the valid output depths of one image, or
// along the images at one depth, whichever makes fewer launches.
template <class Pass>
npu_sim::Status for_slices(const Conv3dArgs& a, std::size_t elem, Pass pass) {
  const auto e = static_cast<int64_t>(elem);
  for (int64_t kd = 0; kd < a.kernel[0]; ++kd) {
    int64_t lo = 0, hi = 0;
    valid_depths(a, kd, &lo, &hi);
    if (lo >= hi) continue;
    const int64_t id0 = lo * a.stride[0] - a.pad[0] + kd * a.dilation[0];
    Conv2dArgs c = slice_args(a, kd, elem);
    const bool along_depth = a.batch <= hi - lo;
    const int64_t outer = along_depth ? a.batch : hi - lo;
    for (int64_t i = 0; i < outer; ++i) {
      if (along_depth) {  // image i, depths lo..hi
        c.batch = hi - lo;
        c.x = static_cast<char*>(a.x) + (i * a.x_strides[0] + id0 * a.x_strides[2]) * e;
        c.y = static_cast<char*>(a.y) + (i * a.y_strides[0] + lo * a.y_strides[2]) * e;
        c.x_strides[0] = a.stride[0] * a.x_strides[2];
        c.y_strides[0] = a.y_strides[2];
      } else {  // depth lo + i, every image
        c.batch = a.batch;
        c.x = static_cast<char*>(a.x) + (id0 + i * a.stride[0]) * a.x_strides[2] * e;
        c.y = static_cast<char*>(a.y) + (lo + i) * a.y_strides[2] * e;
        c.x_strides[0] = a.x_strides[0];
        c.y_strides[0] = a.y_strides[0];
      }
      if (auto st = pass(c); st != npu_sim::Status::kSuccess) return st;
    }
  }
  return npu_sim::Status::kSuccess;
}

// t (5-D, sizes and element strides) = bias[index along dim 1] (a per-channel vector), or 0 without one.
template <typename T>
npu_sim::Status fill_channels(npu_sim::Stream stream, void* base, const int64_t* sizes_, const int64_t* strides_,
                              const void* bias, int64_t bias_stride) {
  std::array<int64_t, 5> sizes{}, strides{};  // by value into the kernel, which runs after this returns
  std::copy(sizes_, sizes_ + 5, sizes.begin());
  std::copy(strides_, strides_ + 5, strides.begin());
  T* t = static_cast<T*>(base);
  const T* b = static_cast<const T*>(bias);
  const int64_t inner = sizes[2] * sizes[3] * sizes[4];
  return parallel_for(stream, "conv3d_init", sizes[0] * sizes[1], std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(inner, 1)),
                      [=](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
                        record_vec(ctx, b != nullptr ? (end - begin) * int64_t{sizeof(T)} : 0,
                                   (end - begin) * inner * int64_t{sizeof(T)}, 0);
                        for (int64_t q = begin; q < end; ++q) {
                          const int64_t n = q / sizes[1], c = q % sizes[1];
                          const T v = b != nullptr ? b[c * bias_stride] : T(0);
                          T* plane = t + n * strides[0] + c * strides[1];
                          for (int64_t i = 0; i < sizes[2]; ++i)
                            for (int64_t j = 0; j < sizes[3]; ++j)
                              for (int64_t k = 0; k < sizes[4]; ++k)
                                plane[i * strides[2] + j * strides[3] + k * strides[4]] = v;
                        }
                      });
}

template <typename T>
npu_sim::Status slices_typed(npu_sim::Stream stream, const Conv3dArgs& a, ConvPass pass) {
  const std::size_t elem = sizeof(T);
  const int64_t xsz[5] = {a.batch, a.in_channels, a.in[0], a.in[1], a.in[2]};
  const int64_t ysz[5] = {a.batch, a.out_channels, a.out[0], a.out[1], a.out[2]};
  const int64_t wsz[5] = {a.out_channels, a.in_channels / a.groups, a.kernel[0], a.kernel[1], a.kernel[2]};
  npu_sim::Status st;
  switch (pass) {
    case ConvPass::kForward:
      st = fill_channels<T>(stream, a.y, ysz, a.y_strides, a.bias, a.bias_stride);
      if (st != npu_sim::Status::kSuccess) return st;
      return for_slices(a, elem, [&](const Conv2dArgs& c) { return conv2d_forward(stream, c); });
    case ConvPass::kBackwardInput:
      st = fill_channels<T>(stream, a.x, xsz, a.x_strides, a.bias, a.bias_stride);
      if (st != npu_sim::Status::kSuccess) return st;
      return for_slices(a, elem, [&](const Conv2dArgs& c) {
        return conv2d_backward_input(stream, c, a.scratch, a.scratch_bytes);
      });
    case ConvPass::kBackwardWeight:
      st = fill_channels<T>(stream, a.w, wsz, a.w_strides, nullptr, 1);
      if (st != npu_sim::Status::kSuccess) return st;
      return for_slices(a, elem, [&](const Conv2dArgs& c) { return conv2d_backward_weight(stream, c); });
  }
  return npu_sim::Status::kInvalidValue;
}

// The largest batch for_slices gives a pass: the valid depths of a kernel depth, or the images.
int64_t max_slice_batch(const Conv3dArgs& a) {
  int64_t m = 1;
  for (int64_t kd = 0; kd < a.kernel[0]; ++kd) {
    int64_t lo = 0, hi = 0;
    valid_depths(a, kd, &lo, &hi);
    if (lo < hi) m = std::max({m, a.batch, hi - lo});
  }
  return m;
}

bool conv3d_by_slices_serves(const Conv3dArgs& a) { return a.dtype == DType::kFloat64; }

}  // namespace

std::size_t conv3d_slices_scratch_bytes(const Conv3dArgs& a) {
  if (!conv3d_by_slices_serves(a)) return 0;
  const Conv2dArgs c = slice_args(a, 0, 1);
  constexpr std::size_t kMaxScratch = 64u << 20;  // more images per GEMM pass, up to this much
  const std::size_t per_image = conv2d_backward_input_scratch_bytes(c, 1);
  const auto images = static_cast<std::size_t>(max_slice_batch(a));
  return std::max(per_image, std::min(per_image * images, kMaxScratch));
}

npu_sim::Status conv3d_by_slices(npu_sim::Stream stream, const Conv3dArgs& a, ConvPass pass) {
  if (!conv3d_by_slices_serves(a)) return npu_sim::Status::kNotSupported;
  if (pass == ConvPass::kBackwardInput &&
      (a.scratch == nullptr || a.scratch_bytes < conv2d_backward_input_scratch_bytes(slice_args(a, 0, 1), 1))) {
    return npu_sim::Status::kInvalidValue;  // less than conv3d_backward_input_scratch_bytes asks for one image
  }
  return slices_typed<double>(stream, a, pass);
}

}  // namespace detail
}  // namespace npu_kernels
