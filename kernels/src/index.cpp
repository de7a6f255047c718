// Indexing kernels: gather/scatter along a dimension, advanced indexing, masked_scatter, nonzero and
// masked_select, embedding backward (see npu_kernels/index.h).
#include "npu_kernels/index.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "npu_kernels/elementwise.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {

namespace {

constexpr int64_t kGrain = 1 << 13;

[[noreturn]] void out_of_bounds(const char* op, int64_t idx, int dim, int64_t size) {
  throw npu_sim::KernelError(std::string(op) + "(): index " + std::to_string(idx) + " is out of bounds for dimension " +
                             std::to_string(dim) + " with size " + std::to_string(size));
}

// a (reduce) b in the compute type of T.
template <typename T>
T combine(IndexReduce r, T a, T b);

// The same with the reduction known at compile time (the scatter loops' inner step).
template <IndexReduce R, typename T>
inline T combine_as(T a, T b) {
  if constexpr (R == IndexReduce::kAssign) {
    return b;
  } else {
    return combine<T>(R, a, b);  // (inlined: the switch folds away on the constant)
  }
}

template <typename T>
T combine(IndexReduce r, T a, T b) {
  using C = compute_t<T>;
  const C x = static_cast<C>(a), y = static_cast<C>(b);
  if constexpr (std::is_same_v<T, bool>) {
    switch (r) {
      case IndexReduce::kAdd: case IndexReduce::kMean: case IndexReduce::kMax: return x || y;
      case IndexReduce::kMul: case IndexReduce::kMin: return x && y;
      default: return y;
    }
  } else {
    switch (r) {
      case IndexReduce::kAdd:
      case IndexReduce::kMean: return static_cast<T>(x + y);
      case IndexReduce::kMul: return static_cast<T>(x * y);
      case IndexReduce::kMax:
        if constexpr (is_complex_v<T>) {
          return b;
        } else {
          if constexpr (std::is_floating_point_v<C>) {
            if (std::isnan(x) || std::isnan(y)) return static_cast<T>(std::isnan(x) ? x : y);
          }
          return static_cast<T>(x > y ? x : y);
        }
      case IndexReduce::kMin:
        if constexpr (is_complex_v<T>) {
          return b;
        } else {
          if constexpr (std::is_floating_point_v<C>) {
            if (std::isnan(x) || std::isnan(y)) return static_cast<T>(std::isnan(x) ? x : y);
          }
          return static_cast<T>(x < y ? x : y);
        }
      default: return b;
    }
  }
}

template <typename T>
T divide_count(T v, int64_t count) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else if constexpr (std::is_integral_v<C>) {
    C q = static_cast<C>(v) / static_cast<C>(count);
    if ((static_cast<C>(v) % static_cast<C>(count) != 0) && ((static_cast<C>(v) < 0) != (count < 0))) --q;
    return static_cast<T>(q);
  } else {
    return static_cast<T>(static_cast<C>(v) / static_cast<C>(static_cast<double>(count)));
  }
}

// Same sizes as `t` but dim `dim` of size 1: the "outer" positions of the lines along dim.
TensorDesc outer_of(const TensorDesc& t, int dim) {
  TensorDesc o = t;
  o.sizes[dim] = 1;
  return o;
}

template <typename T>
void gather_range(const IndexAlongDim& a, int64_t b, int64_t e) {
  T* dst = static_cast<T*>(a.dst.data);
  const T* src = static_cast<const T*>(a.src.data);
  const int64_t* idx = static_cast<const int64_t*>(a.index.data);
  const int last = a.dst.ndim - 1;
  const int64_t inner = last >= 0 ? a.dst.sizes[last] : 1;
  if (last >= 1 && inner >= 16) {
    // Runs along the innermost dim: one walker step per run instead of per element.
    TensorDesc od = a.dst, os = a.src, oi = a.index;
    od.ndim = os.ndim = oi.ndim = last;
    const int64_t sd = a.dst.strides[last], ss = a.src.strides[last], si = a.index.strides[last];
    int64_t pos = b;
    StridedWalker wd(od, b / inner), ws(os, b / inner), wi(oi, b / inner);
    while (pos < e) {
      const int64_t j0 = pos % inner;
      const int64_t j1 = std::min<int64_t>(inner, j0 + (e - pos));
      T* d = dst + wd.offset();
      const T* s0 = src + ws.offset();
      const int64_t* ix = idx + wi.offset();
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t k = ix[j * si];
        int64_t kk = k;
        if (kk < 0 && a.wrap_negative && kk >= -a.dim_size) kk += a.dim_size;
        if (kk < 0 || kk >= a.dim_size) out_of_bounds(a.op, k, a.dim, a.dim_size);
        d[j * sd] = s0[j * ss + kk * a.dim_stride];
      }
      pos += j1 - j0;
      wd.next();
      ws.next();
      wi.next();
    }
    return;
  }
  StridedWalker wd(a.dst, b), ws(a.src, b), wi(a.index, b);
  for (int64_t i = b; i < e; ++i, wd.next(), ws.next(), wi.next()) {
    int64_t k = idx[wi.offset()];
    if (k < 0 && a.wrap_negative && k >= -a.dim_size) k += a.dim_size;
    if (k < 0 || k >= a.dim_size) out_of_bounds(a.op, idx[wi.offset()], a.dim, a.dim_size);
    dst[wd.offset()] = src[ws.offset() + k * a.dim_stride];
  }
}

// Scatter lines [b, e) with a reduction that needs no per-slot count (assign, add, mul, max, min with
// include_self): one tight loop per line, the reduction fixed at compile time.
template <typename T, IndexReduce R>
void scatter_plain(const IndexAlongDim& a, int64_t b, int64_t e) {
  T* dst = static_cast<T*>(a.dst.data);
  const T* src = static_cast<const T*>(a.src.data);
  const int64_t* idx = static_cast<const int64_t*>(a.index.data);
  const T value = a.src_scalar ? scalar_as<T>(a.value) : T{};
  const int d = a.dim;
  const int64_t len = a.index.sizes[d], si = a.index.strides[d], ss = a.src.strides[d], size = a.dim_size;
  const TensorDesc od = outer_of(a.dst, d), os = outer_of(a.src, d), oi = outer_of(a.index, d);
  StridedWalker wd(od, b), ws(os, b), wi(oi, b);
  for (int64_t o = b; o < e; ++o, wd.next(), ws.next(), wi.next()) {
    T* line = dst + wd.offset();
    const int64_t* ix = idx + wi.offset();
    const T* sp = src + (a.src_scalar ? 0 : ws.offset());
    for (int64_t j = 0; j < len; ++j) {
      int64_t k = ix[j * si];
      if (k < 0 && a.wrap_negative && k >= -size) k += size;
      if (k < 0 || k >= size) out_of_bounds(a.op, ix[j * si], a.dim, size);
      T& slot = line[k * a.dim_stride];
      slot = combine_as<R>(slot, a.src_scalar ? value : sp[j * ss]);
    }
  }
}

// Scatter lines [b, e): scatter_plain, or for mean and include_self=False a count per slot touched. Returns the
// slots a mean divided (touched lines' distinct indices), for the launch records.
template <typename T>
int64_t scatter_range(const IndexAlongDim& a, int64_t b, int64_t e) {
  if (a.reduce != IndexReduce::kMean && (a.include_self || a.reduce == IndexReduce::kAssign)) {
    switch (a.reduce) {
      case IndexReduce::kAssign: scatter_plain<T, IndexReduce::kAssign>(a, b, e); break;
      case IndexReduce::kAdd: scatter_plain<T, IndexReduce::kAdd>(a, b, e); break;
      case IndexReduce::kMul: scatter_plain<T, IndexReduce::kMul>(a, b, e); break;
      case IndexReduce::kMax: scatter_plain<T, IndexReduce::kMax>(a, b, e); break;
      case IndexReduce::kMin: scatter_plain<T, IndexReduce::kMin>(a, b, e); break;
      case IndexReduce::kMean: break;
    }
    return 0;
  }
  int64_t divided = 0;
  T* dst = static_cast<T*>(a.dst.data);
  const T* src = static_cast<const T*>(a.src.data);
  const int64_t* idx = static_cast<const int64_t*>(a.index.data);
  const T value = a.src_scalar ? scalar_as<T>(a.value) : T{};
  const int d = a.dim;
  const int64_t len = a.index.sizes[d];
  const TensorDesc od = outer_of(a.dst, d), os = outer_of(a.src, d), oi = outer_of(a.index, d);
  std::vector<int64_t> count(a.dim_size, 0);
  std::vector<int64_t> touched;
  StridedWalker wd(od, b), ws(os, b), wi(oi, b);
  for (int64_t o = b; o < e; ++o, wd.next(), ws.next(), wi.next()) {
    const int64_t base_d = wd.offset();
    for (int64_t j = 0; j < len; ++j) {
      int64_t k = idx[wi.offset() + j * a.index.strides[d]];
      if (k < 0 && a.wrap_negative && k >= -a.dim_size) k += a.dim_size;
      if (k < 0 || k >= a.dim_size) out_of_bounds(a.op, idx[wi.offset() + j * a.index.strides[d]], a.dim, a.dim_size);
      const T v = a.src_scalar ? value : src[ws.offset() + j * a.src.strides[d]];
      T& slot = dst[base_d + k * a.dim_stride];
      if (count[k] == 0) {
        touched.push_back(k);
        count[k] = a.include_self ? 1 : 0;
        if (!a.include_self) {
          slot = v;
          count[k] = 1;
          continue;
        }
      }
      ++count[k];
      slot = combine<T>(a.reduce, slot, v);
    }
    if (a.reduce == IndexReduce::kMean) divided += static_cast<int64_t>(touched.size());
    for (const int64_t k : touched) {
      if (a.reduce == IndexReduce::kMean) {
        T& slot = dst[base_d + k * a.dim_stride];
        slot = divide_count<T>(slot, count[k]);
      }
      count[k] = 0;
    }
    touched.clear();
  }
  return divided;
}

}  // namespace

npu_sim::Status index_along_dim(npu_sim::Stream stream, const IndexAlongDim& a) {
  if (a.index.numel() == 0) return npu_sim::Status::kSuccess;
  const int64_t es = static_cast<int64_t>(dtype_size(a.dst.dtype));
  if (!a.scatter) {
    // Launch records (gather): per element its int64 index and one source element read, one written;
    // 1 Vector op (the bounds check / move) per element.
    return parallel_for(stream, a.op, a.index.numel(), kGrain, [a, es](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      detail::record_vec(ctx, (e - b) * (8 + es), (e - b) * es, e - b);
      dispatch_dtype(a.dst.dtype, [&](auto tag) { gather_range<decltype(tag)>(a, b, e); });
    });
  }
  const int64_t outer = outer_of(a.index, a.dim).numel();
  const int64_t line = std::max<int64_t>(1, a.index.sizes[a.dim]);
  // Launch records (scatter): per element its int64 index and the source element (none for a scalar
  // source) read, the destination slot written; a reducing scatter also reads the slot (counted for every
  // element, include_self=False's first hits included) and mean reads and writes each divided slot again.
  // 1 Vector op per element (+1 per divided slot).
  return parallel_for(stream, a.op, outer, std::max<int64_t>(1, kGrain / line),
                      [a, es](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        int64_t divided = 0;
                        dispatch_dtype(a.dst.dtype, [&](auto tag) { divided = scatter_range<decltype(tag)>(a, b, e); });
                        const int64_t n = (e - b) * a.index.sizes[a.dim];
                        const int64_t rmw = a.reduce == IndexReduce::kAssign ? 0 : 1;
                        detail::record_vec(ctx, n * (8 + (a.src_scalar ? 0 : es) + rmw * es) + divided * es,
                                           (n + divided) * es, n + divided);
                      });
}

namespace {

// The element offset index value v of the k-th index tensor contributes (v wrapped once if negative), after the
// bounds check every advanced-index path makes.
int64_t index_term(const AdvancedIndexArgs& a, int k, int64_t v) {
  const int64_t size = a.indexed_sizes[k];
  if (v < -size || v >= size) out_of_bounds(a.op, v, k, size);
  return (v < 0 ? v + size : v) * a.indexed_strides[k];
}

template <typename T>
void advanced_element(const AdvancedIndexArgs& a, T* data, T* other, int64_t off) {
  if (!a.put) {
    *other = data[off];
  } else if (a.accumulate) {
    data[off] = combine<T>(IndexReduce::kAdd, data[off], *other);
  } else {
    data[off] = *other;
  }
}

template <typename T>
void advanced_range(const AdvancedIndexArgs& a, int64_t b, int64_t e) {
  T* data = static_cast<T*>(a.data.data);
  T* other = static_cast<T*>(a.other.data);
  const int last = a.other.ndim - 1;
  const int64_t inner = last >= 0 ? a.other.sizes[last] : 1;
  if (last >= 1 && inner >= 16) {
    // Runs along the innermost dim: one walker step per run instead of per element.
    TensorDesc od = a.data, oo = a.other;
    TensorDesc oi[kMaxIndices];
    od.ndim = oo.ndim = last;
    StridedWalker wd(od, b / inner), wo(oo, b / inner);
    std::vector<StridedWalker> wi;
    wi.reserve(a.nindex);
    for (int k = 0; k < a.nindex; ++k) {
      oi[k] = a.index[k];
      oi[k].ndim = last;
      wi.emplace_back(oi[k], b / inner);
    }
    // The usual case (x[i] over leading dims): every index is the same along the run, so the run's offset is
    // computed once and the run moves as a strided copy (a memcpy where both sides are dense).
    const bool run_shares_index = std::all_of(a.index, a.index + a.nindex, [last](const TensorDesc& t) {
      return t.strides[last] == 0;
    });
    const int64_t ds = a.data.strides[last], os = a.other.strides[last];
    int64_t pos = b;
    while (pos < e) {
      const int64_t j0 = pos % inner;
      const int64_t j1 = std::min<int64_t>(inner, j0 + (e - pos));
      if (run_shares_index) {
        int64_t off = wd.offset() + j0 * ds;
        for (int k = 0; k < a.nindex; ++k) {
          off += index_term(a, k, static_cast<const int64_t*>(a.index[k].data)[wi[k].offset()]);
        }
        T* o = other + wo.offset() + j0 * os;
        const int64_t m = j1 - j0;
        T* d = data + off;
        if (!a.put && ds == 1 && os == 1) {  // (one loop per mode: advanced_element's branch per element costs 2x)
          std::memcpy(o, d, m * sizeof(T));
        } else if (!a.put) {
          for (int64_t j = 0; j < m; ++j) o[j * os] = d[j * ds];
        } else if (a.accumulate) {
          for (int64_t j = 0; j < m; ++j) d[j * ds] = combine<T>(IndexReduce::kAdd, d[j * ds], o[j * os]);
        } else {
          for (int64_t j = 0; j < m; ++j) d[j * ds] = o[j * os];
        }
        pos += m;
        wd.next();
        wo.next();
        for (auto& w : wi) w.next();
        continue;
      }
      for (int64_t j = j0; j < j1; ++j) {
        int64_t off = 0;
        for (int k = 0; k < a.nindex; ++k) {
          off += index_term(a, k, static_cast<const int64_t*>(a.index[k].data)[wi[k].offset() +
                                                                                  j * a.index[k].strides[last]]);
        }
        advanced_element<T>(a, data, other + wo.offset() + j * a.other.strides[last],
                            wd.offset() + j * a.data.strides[last] + off);
      }
      pos += j1 - j0;
      wd.next();
      wo.next();
      for (auto& w : wi) w.next();
    }
    return;
  }
  StridedWalker wd(a.data, b), wo(a.other, b);
  std::vector<StridedWalker> wi;
  wi.reserve(a.nindex);
  for (int k = 0; k < a.nindex; ++k) wi.emplace_back(a.index[k], b);
  for (int64_t i = b; i < e; ++i) {
    int64_t off = 0;
    for (int k = 0; k < a.nindex; ++k) {
      off += index_term(a, k, static_cast<const int64_t*>(a.index[k].data)[wi[k].offset()]);
      wi[k].next();
    }
    advanced_element<T>(a, data, other + wo.offset(), wd.offset() + off);
    wd.next();
    wo.next();
  }
}

}  // namespace

npu_sim::Status advanced_index(npu_sim::Stream stream, const AdvancedIndexArgs& a) {
  const int64_t n = a.other.numel();
  if (n == 0) return npu_sim::Status::kSuccess;
  // accumulate: one block, so that duplicate indices add up without races.
  const int64_t grain = (a.put && a.accumulate) ? n : kGrain;
  // Launch records: per element its nindex int64 indices, one element read (data for index, other for
  // index_put; accumulate also reads the data slot) and one written; nindex + 1 Vector ops per element
  // (offset multiply-adds, the move or add).
  const int64_t es = static_cast<int64_t>(dtype_size(a.data.dtype));
  const int64_t per_rd = 8 * a.nindex + es + (a.put && a.accumulate ? es : 0);
  return parallel_for(stream, a.op, n, grain, [a, es, per_rd](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    detail::record_vec(ctx, (e - b) * per_rd, (e - b) * es, (e - b) * (a.nindex + 1));
    dispatch_dtype(a.data.dtype, [&](auto tag) { advanced_range<decltype(tag)>(a, b, e); });
  });
}

npu_sim::Status masked_scatter(npu_sim::Stream stream, const TensorDesc& self, const TensorDesc& mask,
                               const void* source, int64_t source_numel) {
  // Launch records: the bool mask read per element, and per set element one source element read and one
  // written; 1 Vector op per mask element.
  return npu_sim::launch_kernel(stream, "masked_scatter_", 1, [self, mask, source, source_numel](const npu_sim::BlockContext& ctx) {
    const int64_t es = static_cast<int64_t>(dtype_size(self.dtype));
    int64_t moved = 0;
    dispatch_dtype(self.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* out = static_cast<T*>(self.data);
      const T* src = static_cast<const T*>(source);
      const bool* m = static_cast<const bool*>(mask.data);
      int64_t j = 0;
      StridedWalker ws(self, 0), wm(mask, 0);
      for (int64_t i = 0; i < self.numel(); ++i, ws.next(), wm.next()) {
        if (!m[wm.offset()]) continue;
        if (j >= source_numel) {
          throw npu_sim::KernelError("masked_scatter_(): Number of elements of source < number of ones in mask");
        }
        out[ws.offset()] = src[j++];
      }
      moved = j;
    });
    detail::record_vec(ctx, self.numel() + moved * es, moved * es, self.numel());
  });
}

npu_sim::Status triangle(npu_sim::Stream stream, const TensorDesc& out, const TensorDesc& in, int64_t diagonal,
                         bool upper) {
  // Line by line along whichever matrix dim of `out` is denser in memory (rows of a row-major matrix, columns of
  // a column-major one, as LAPACK leaves them): each line is a run to zero, a run to keep, a run to zero.
  const int nd = out.ndim;
  const int64_t rows = out.sizes[nd - 2], cols = out.sizes[nd - 1];
  const bool by_rows = std::abs(out.strides[nd - 1]) <= std::abs(out.strides[nd - 2]);
  auto lines_of = [&](const TensorDesc& t) {
    TensorDesc l = t;
    l.ndim = nd - 1;
    if (!by_rows) l.sizes[nd - 2] = cols, l.strides[nd - 2] = t.strides[nd - 1];
    return l;
  };
  const TensorDesc lo = lines_of(out), li = lines_of(in);
  const int64_t len = by_rows ? cols : rows, per_matrix = by_rows ? rows : cols;
  const int64_t so = by_rows ? out.strides[nd - 1] : out.strides[nd - 2];
  const int64_t si = by_rows ? in.strides[nd - 1] : in.strides[nd - 2];
  const int64_t lines = lo.numel();
  if (lines == 0 || len == 0) return npu_sim::Status::kSuccess;
  return parallel_for(
      stream, upper ? "triu" : "tril", lines, std::max<int64_t>(1, kGrain * 2 / len),
      [out, in, lo, li, diagonal, upper, by_rows, len, per_matrix, so, si](int64_t b, int64_t e,
                                                                           const npu_sim::BlockContext& ctx) {
        // Launch records: each element read and written once; 1 Vector op (the compare).
        const int64_t es = static_cast<int64_t>(dtype_size(out.dtype));
        detail::record_vec(ctx, (e - b) * len * es, (e - b) * len * es, (e - b) * len);
        dispatch_dtype(out.dtype, [&](auto tag) {
          using T = decltype(tag);
          T* o0 = static_cast<T*>(out.data);
          const T* s0 = static_cast<const T*>(in.data);
          StridedWalker wo(lo, b), wi(li, b);
          for (int64_t i = b; i < e; ++i, wo.next(), wi.next()) {
            // The kept run [k0, k1) of this line: tril keeps c - r <= diagonal, triu c - r >= diagonal.
            const int64_t line = i % per_matrix;
            // On a row r the diagonal is at column r + diagonal (triu keeps from it, tril up to it); on a column c
            // it is at row c - diagonal (tril keeps from it, triu up to it).
            const int64_t at_diag = by_rows ? line + diagonal : line - diagonal;
            int64_t k0 = 0, k1 = len;
            if (upper == by_rows) {
              k0 = std::clamp<int64_t>(at_diag, 0, len);
            } else {
              k1 = std::clamp<int64_t>(at_diag + 1, 0, len);
            }
            T* o = o0 + wo.offset();
            const T* s = s0 + wi.offset();
            for (int64_t k = 0; k < k0; ++k) o[k * so] = convert<T>(0);
            if (o != s || so != si) {
              for (int64_t k = k0; k < k1; ++k) o[k * so] = s[k * si];
            }
            for (int64_t k = k1; k < len; ++k) o[k * so] = convert<T>(0);
          }
        });
      });
}

namespace {
template <typename T>
bool nonzero_at(const T* p, int64_t off) {
  return convert<bool>(p[off]);
}
}  // namespace

npu_sim::Status count_nonzero(npu_sim::Stream stream, const TensorDesc& in, int64_t* count) {
  // One block: the count is tiny work next to the host sync that follows it.
  // Launch records: every element read, the int64 count written; 1 Vector op per element.
  return npu_sim::launch_kernel(stream, "nonzero", 1, [in, count](const npu_sim::BlockContext& ctx) {
    int64_t c = 0;
    const int64_t n = in.numel();
    detail::record_vec(ctx, n * static_cast<int64_t>(dtype_size(in.dtype)), 8, n);
    dispatch_dtype(in.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* p = static_cast<const T*>(in.data);
      StridedWalker w(in, 0);
      for (int64_t i = 0; i < n; ++i, w.next()) c += nonzero_at<T>(p, w.offset()) ? 1 : 0;
    });
    *count = c;
  });
}

npu_sim::Status nonzero(npu_sim::Stream stream, const TensorDesc& in, int64_t* out, int64_t n) {
  // Launch records: the elements scanned (up to the n-th nonzero) read, ndim int64 coordinates written per
  // nonzero; 1 Vector op per element scanned.
  return npu_sim::launch_kernel(stream, "nonzero", 1, [in, out, n](const npu_sim::BlockContext& ctx) {
    const int64_t total = in.numel();
    int64_t row = 0, scanned = 0;
    dispatch_dtype(in.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* p = static_cast<const T*>(in.data);
      StridedWalker w(in, 0);
      for (int64_t i = 0; i < total && row < n; ++i, w.next()) {
        scanned = i + 1;
        if (!nonzero_at<T>(p, w.offset())) continue;
        int64_t rem = i;
        for (int d = in.ndim - 1; d >= 0; --d) {
          out[row * in.ndim + d] = rem % in.sizes[d];
          rem /= in.sizes[d];
        }
        ++row;
      }
    });
    detail::record_vec(ctx, scanned * static_cast<int64_t>(dtype_size(in.dtype)), row * in.ndim * 8, scanned);
  });
}

npu_sim::Status masked_select(npu_sim::Stream stream, const TensorDesc& in, const TensorDesc& mask, void* out,
                              int64_t n) {
  // Launch records: the mask scanned (up to the n-th set element) read, each selected element read and
  // written; 1 Vector op per element scanned.
  return npu_sim::launch_kernel(stream, "masked_select", 1, [in, mask, out, n](const npu_sim::BlockContext& ctx) {
    const int64_t total = in.numel();
    const int64_t es = static_cast<int64_t>(dtype_size(in.dtype));
    int64_t scanned = 0, picked = 0;
    dispatch_dtype(in.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* p = static_cast<const T*>(in.data);
      const bool* m = static_cast<const bool*>(mask.data);
      T* o = static_cast<T*>(out);
      int64_t j = 0;
      StridedWalker w(in, 0), wm(mask, 0);
      for (int64_t i = 0; i < total && j < n; ++i, w.next(), wm.next()) {
        if (m[wm.offset()]) o[j++] = p[w.offset()];
        scanned = i + 1;
      }
      picked = j;
    });
    detail::record_vec(ctx, scanned + picked * es, picked * es, scanned);
  });
}

npu_sim::Status embedding_backward(npu_sim::Stream stream, const TensorDesc& grad_weight, const TensorDesc& grad,
                                   const int64_t* indices, int64_t n, int64_t padding_idx) {
  const int64_t cols = grad_weight.sizes[1];
  const int64_t rows = grad_weight.sizes[0];
  return parallel_for(stream, "embedding_dense_backward", cols, 64,
                      [grad_weight, grad, indices, n, padding_idx, rows](int64_t b, int64_t e,
                                                                         const npu_sim::BlockContext& ctx) {
                        // Launch records: every block reads all n int64 indices (its columns of every
                        // row); per row not padding, its columns of grad read and of grad_weight read,
                        // added to and written back; 1 Vector op per (row, column).
                        int64_t hits = 0;
                        dispatch_dtype(grad_weight.dtype, [&](auto tag) {
                          using T = decltype(tag);
                          T* gw = static_cast<T*>(grad_weight.data);
                          const T* g = static_cast<const T*>(grad.data);
                          for (int64_t i = 0; i < n; ++i) {
                            const int64_t r = indices[i];
                            if (r == padding_idx) continue;
                            ++hits;
                            if (r < 0 || r >= rows) out_of_bounds("embedding_dense_backward", r, 0, rows);
                            for (int64_t c = b; c < e; ++c) {
                              T& slot = gw[r * grad_weight.strides[0] + c * grad_weight.strides[1]];
                              slot = combine<T>(IndexReduce::kAdd, slot, g[i * grad.strides[0] + c * grad.strides[1]]);
                            }
                          }
                        });
                        const int64_t es = static_cast<int64_t>(dtype_size(grad_weight.dtype));
                        detail::record_vec(ctx, n * 8 + 2 * hits * (e - b) * es, hits * (e - b) * es, hits * (e - b));
                      });
}

}  // namespace npu_kernels
