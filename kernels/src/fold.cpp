// im2col / col2im kernels (see npu_kernels/fold.h): both split the work by whole planes, so col2im's
// overlapping windows never race; col2im accumulates a plane in a float buffer before one rounding.
#include "npu_kernels/fold.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {

namespace {

// Calls f(tap_row, l, h, w) for every kernel tap of every window position of one plane; h/w may be
// outside the image (padding).
template <typename F>
void for_each_tap(const FoldArgs& a, F f) {
  const int64_t L = a.out_h * a.out_w;
  for (int64_t i = 0; i < a.kernel_h; ++i) {
    for (int64_t j = 0; j < a.kernel_w; ++j) {
      const int64_t row = i * a.kernel_w + j;
      for (int64_t oh = 0; oh < a.out_h; ++oh) {
        const int64_t h = oh * a.stride_h - a.pad_h + i * a.dilation_h;
        for (int64_t ow = 0; ow < a.out_w; ++ow) {
          f(row * L + oh * a.out_w + ow, h, ow * a.stride_w - a.pad_w + j * a.dilation_w);
        }
      }
    }
  }
}

// The taps of one plane that fall inside the image: a tap is inside when its row and its column are, so
// the count is (inside rows over kernel rows x output rows) x (inside columns likewise).
int64_t in_bounds_taps(const FoldArgs& a) {
  int64_t rows = 0, cols = 0;
  for (int64_t i = 0; i < a.kernel_h; ++i) {
    for (int64_t oh = 0; oh < a.out_h; ++oh) {
      const int64_t h = oh * a.stride_h - a.pad_h + i * a.dilation_h;
      rows += h >= 0 && h < a.in_h ? 1 : 0;
    }
  }
  for (int64_t j = 0; j < a.kernel_w; ++j) {
    for (int64_t ow = 0; ow < a.out_w; ++ow) {
      const int64_t w = ow * a.stride_w - a.pad_w + j * a.dilation_w;
      cols += w >= 0 && w < a.in_w ? 1 : 0;
    }
  }
  return rows * cols;
}

template <typename E>
npu_sim::Status gather(npu_sim::Stream s, const FoldArgs& a, const void* image, void* columns) {
  const E* x = static_cast<const E*>(image);
  E* c = static_cast<E*>(columns);
  const int64_t plane_cols = a.kernel_h * a.kernel_w * a.out_h * a.out_w;
  // Launch records, per plane: every in-bounds tap read from the image (padding taps read nothing), every
  // column element written; 1 Vector op (the move) per column element.
  const int64_t taps = in_bounds_taps(a), es = sizeof(E);
  return parallel_for(s, "im2col", a.planes, 1, [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    detail::record_vec(ctx, (e - b) * taps * es, (e - b) * plane_cols * es, (e - b) * plane_cols);
    for (int64_t p = b; p < e; ++p) {
      const E* src = x + p * a.in_h * a.in_w;
      E* dst = c + p * plane_cols;
      for_each_tap(a, [&](int64_t k, int64_t h, int64_t w) {
        if (h >= 0 && h < a.in_h && w >= 0 && w < a.in_w) dst[k] = src[h * a.in_w + w];
        else std::memset(&dst[k], 0, sizeof(E));  // all-zero bits are 0 in every dtype
      });
    }
  });
}

}  // namespace

npu_sim::Status im2col(npu_sim::Stream s, const FoldArgs& a, const void* image, void* columns) {
  switch (dtype_size(a.dtype)) {
    case 1: return gather<uint8_t>(s, a, image, columns);
    case 2: return gather<uint16_t>(s, a, image, columns);
    case 4: return gather<uint32_t>(s, a, image, columns);
    case 8: return gather<uint64_t>(s, a, image, columns);
    default: return npu_sim::Status::kInvalidValue;
  }
}

npu_sim::Status col2im(npu_sim::Stream s, const FoldArgs& a, const void* columns, void* image) {
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* c = static_cast<const T*>(columns);
    T* x = static_cast<T*>(image);
    const int64_t plane_cols = a.kernel_h * a.kernel_w * a.out_h * a.out_w, n_in = a.in_h * a.in_w;
    // Launch records, per plane: the in-bounds column elements read (added into a block-local plane, the
    // UB), the image plane written once; 1 Vector op (add) per in-bounds tap.
    const int64_t taps = in_bounds_taps(a), ts = sizeof(T);
    return parallel_for(s, "col2im", a.planes, 1, [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      detail::record_vec(ctx, (e - b) * taps * ts, (e - b) * n_in * ts, (e - b) * taps);
      std::vector<A> acc(static_cast<size_t>(n_in));  // one plane, in the UB's role
      for (int64_t p = b; p < e; ++p) {
        std::fill(acc.begin(), acc.end(), A(0));
        const T* src = c + p * plane_cols;
        for_each_tap(a, [&](int64_t k, int64_t h, int64_t w) {
          if (h >= 0 && h < a.in_h && w >= 0 && w < a.in_w) acc[h * a.in_w + w] += static_cast<A>(src[k]);
        });
        T* dst = x + p * n_in;
        for (int64_t i = 0; i < n_in; ++i) dst[i] = static_cast<T>(acc[i]);
      }
    });
  });
}

}  // namespace npu_kernels
