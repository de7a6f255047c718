// Strided copy with dtype conversion, and fill: the device kernels behind copy_, to(), fill_, zero_.
#include "npu_kernels/copy.h"

#include <algorithm>
#include <cstring>

#include "dtype_convert.h"  // row conversions fp16/bf16 <-> fp32 (F16C where the CPU has it)
#include "npu_kernels/launch.h"

namespace npu_kernels {

namespace {
constexpr int64_t kCopyGrain = 1 << 15;  // as elementwise (a strided 64K-element copy: 22 us as one block, 16 as two)

// A contiguous run converted: the dtype layer's row conversions between float and fp16/bf16, else per element.
template <typename D, typename S>
inline void convert_run(D* o, const S* x, int64_t n) {
  if constexpr (is_reduced_float_v<D> && std::is_same_v<S, float>) {
    detail::narrow_row(o, x, n);
  } else if constexpr (std::is_same_v<D, float> && is_reduced_float_v<S>) {
    detail::widen_row(o, x, n);
  } else {
    for (int64_t j = 0; j < n; ++j) o[j] = convert<D>(x[j]);
  }
}

template <typename D, typename S>
void copy_range(const TensorDesc& dst, const TensorDesc& src, int64_t begin, int64_t end, bool dst_contig,
                bool src_contig) {
  D* out = static_cast<D*>(dst.data);
  const S* in = static_cast<const S*>(src.data);
  if (dst_contig && src_contig) {
    if constexpr (std::is_same_v<D, S>) {
      std::memcpy(out + begin, in + begin, sizeof(D) * (end - begin));
    } else {
      convert_run(out + begin, in + begin, end - begin);
    }
    return;
  }
  // Strided: whole runs along both innermost dims at a time (a tight loop with fixed strides), not a
  // multi-dim index update per element (transposes made contiguous are ~10% of a GPT-mini step); consecutive
  // whole runs along the second-innermost dim as one block of rows (heads split or merged: runs of 32).
  StridedWalker wd(dst, begin), ws(src, begin);
  const int nd = dst.ndim;
  const int64_t row_o = nd > 1 ? dst.strides[nd - 2] : 0, row_i = nd > 1 ? src.strides[nd - 2] : 0;
  const int64_t so = wd.inner_stride(), si = ws.inner_stride();
  for (int64_t i = begin; i < end;) {
    const int64_t run = std::min(end - i, std::min(wd.left(), ws.left()));
    int64_t rows = 1;
    if (nd > 1 && run == dst.sizes[nd - 1]) rows = std::min({wd.rows_left(), ws.rows_left(), (end - i) / run});
    D* o = out + wd.offset();
    const S* x = in + ws.offset();
    for (int64_t r = 0; r < rows; ++r, o += row_o, x += row_i) {
      if (so == 1 && si == 1) {  // unit-stride runs (e.g. heads merged back): vector copies, not a stride multiply
        if constexpr (std::is_same_v<D, S>) {
          std::memcpy(o, x, sizeof(D) * run);
        } else {
          convert_run(o, x, run);
        }
      } else if (so == 1 && si == 0) {  // a broadcast source (autograd's expanded gradients): one value per run
        std::fill(o, o + run, convert<D>(*x));
      } else {
        for (int64_t j = 0; j < run; ++j) o[j * so] = convert<D>(x[j * si]);
      }
    }
    if (rows > 1) {
      wd.skip_rows(rows);
      ws.skip_rows(rows);
    } else {
      wd.skip(run);
      ws.skip(run);
    }
    i += run * rows;
  }
}

// A copy that transposes the last two dims (one side row-major, the other column-major: contiguous() of an mT,
// LAPACK's column-major copies): 32 x 32 tiles, so both the reads and the writes stay in a few cache lines
// instead of one of them striding a whole row per element.
bool transposes_last_two(const TensorDesc& dst, const TensorDesc& src) {
  const int nd = dst.ndim;
  if (nd < 2 || dst.sizes[nd - 1] < 8 || dst.sizes[nd - 2] < 8) return false;
  // a broadcast dim (stride 0: an expanded column, say) is no transpose; the walker fills its runs
  if (src.strides[nd - 1] == 0 || src.strides[nd - 2] == 0) return false;
  const bool d_rows = dst.strides[nd - 1] == 1, d_cols = dst.strides[nd - 2] == 1;
  const bool s_rows = src.strides[nd - 1] == 1, s_cols = src.strides[nd - 2] == 1;
  return (d_rows && s_cols && !s_rows) || (d_cols && s_rows && !d_rows);
}

npu_sim::Status copy_transposed(npu_sim::Stream stream, const TensorDesc& dst, const TensorDesc& src) {
  constexpr int64_t kTile = 32;
  const int nd = dst.ndim;
  const int64_t rows = dst.sizes[nd - 2], cols = dst.sizes[nd - 1], row_tiles = (rows + kTile - 1) / kTile;
  TensorDesc bd = dst, bs = src;  // the batch dims only
  bd.ndim = bs.ndim = nd - 2;
  const int64_t units = bd.numel() * row_tiles;
  return parallel_for(stream, "copy_cast", units, std::max<int64_t>(1, kCopyGrain / (kTile * cols)),
                      [dst, src, bd, bs, rows, cols, row_tiles](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        const int nd = dst.ndim;
                        const int64_t dr = dst.strides[nd - 2], dc = dst.strides[nd - 1];
                        const int64_t sr = src.strides[nd - 2], sc = src.strides[nd - 1];
                        uint64_t moved = 0;
                        dispatch_dtype(dst.dtype, [&](auto d) {
                          dispatch_dtype(src.dtype, [&](auto s) {
                            using D = decltype(d);
                            using S = decltype(s);
                            for (int64_t u = b; u < e; ++u) {
                              const int64_t m = u / row_tiles, r0 = u % row_tiles * kTile;
                              const int64_t r1 = std::min(rows, r0 + kTile);
                              D* o = static_cast<D*>(dst.data) + StridedWalker(bd, m).offset();
                              const S* x = static_cast<const S*>(src.data) + StridedWalker(bs, m).offset();
                              for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
                                const int64_t c1 = std::min(cols, c0 + kTile);
                                for (int64_t r = r0; r < r1; ++r)
                                  for (int64_t c = c0; c < c1; ++c) o[r * dr + c * dc] = convert<D>(x[r * sr + c * sc]);
                              }
                              moved += static_cast<uint64_t>((r1 - r0) * cols);
                            }
                          });
                        });
                        npu_sim::record_traffic(ctx, moved * dtype_size(src.dtype), moved * dtype_size(dst.dtype), 0, 0);
                      });
}

// Both operands with their dims permuted into dst's memory order (strides descending), as TensorIterator orders
// an iteration: a copy between two column-major tensors, say, then walks memory contiguously (and is a memcpy).
void order_like_dst(TensorDesc& dst, TensorDesc& src) {
  const int nd = dst.ndim;
  int perm[kMaxDims];
  for (int d = 0; d < nd; ++d) {
    if (dst.strides[d] < 0) return;  // a flipped destination: keep the logical order
    perm[d] = d;
  }
  std::stable_sort(perm, perm + nd, [&](int a, int b) { return dst.strides[a] > dst.strides[b]; });
  const TensorDesc d0 = dst, s0 = src;
  for (int d = 0; d < nd; ++d) {
    dst.sizes[d] = src.sizes[d] = d0.sizes[perm[d]];
    dst.strides[d] = d0.strides[perm[d]];
    src.strides[d] = s0.strides[perm[d]];
  }
}
}  // namespace

npu_sim::Status copy_cast(npu_sim::Stream stream, const TensorDesc& dst_in, const TensorDesc& src_in) {
  TensorDesc dst = dst_in, src = src_in;
  order_like_dst(dst, src);
  if (transposes_last_two(dst, src)) return copy_transposed(stream, dst, src);
  const int64_t n = dst.numel();
  const bool dst_contig = dst.is_contiguous();
  const bool src_contig = src.is_contiguous();
  return parallel_for(stream, "copy_cast", n, kCopyGrain,
                      [dst, src, dst_contig, src_contig](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        const auto n = static_cast<std::uint64_t>(e - b);
                        npu_sim::record_traffic(ctx, n * dtype_size(src.dtype), n * dtype_size(dst.dtype), 0, 0);
                        dispatch_dtype(dst.dtype, [&](auto d) {
                          dispatch_dtype(src.dtype, [&](auto s) {
                            copy_range<decltype(d), decltype(s)>(dst, src, b, e, dst_contig, src_contig);
                          });
                        });
                      });
}

npu_sim::Status fill(npu_sim::Stream stream, const TensorDesc& dst, ScalarValue value) {
  const bool contig = dst.is_contiguous();
  return parallel_for(stream, "fill", dst.numel(), kCopyGrain,
                      [dst, value, contig](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        const auto n = static_cast<std::uint64_t>(e - b);
                        npu_sim::record_traffic(ctx, 0, n * dtype_size(dst.dtype), 0, 0);
                        dispatch_dtype(dst.dtype, [&](auto tag) {
                          using T = decltype(tag);
                          const T v = scalar_as<T>(value);
                          T* out = static_cast<T*>(dst.data);
                          if (contig) {
                            for (int64_t i = b; i < e; ++i) out[i] = v;
                            return;
                          }
                          StridedWalker w(dst, b);
                          for (int64_t i = b; i < e; ++i, w.next()) out[w.offset()] = v;
                        });
                      });
}

}  // namespace npu_kernels
