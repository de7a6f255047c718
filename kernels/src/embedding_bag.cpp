// embedding_bag kernels (see npu_kernels/embedding_bag.h): the forward reduces bag by bag (one block owns a
// range of bags and their output rows), the table's backward splits the table's rows between blocks (each scans
// every index and keeps its own rows: deterministic, no atomics), the per-sample weights' one index by index.
#include "npu_kernels/embedding_bag.h"

#include <algorithm>
#include <string>
#include <vector>

#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "traffic.h"
#include "dtype_convert.h"
#include "npu_kernels/vec16.h"

namespace npu_kernels {
namespace {

using Status = npu_sim::Status;

// CPU's words for an index outside the table (i: its position in the indices).
[[noreturn]] void bad_index(int64_t i, int64_t row, int64_t num_weights) {
  throw npu_sim::KernelError("Index " + std::to_string(i) + " of input takes value " + std::to_string(row) +
                             " which is not in the valid range [0, " + std::to_string(num_weights) + ")");
}

void check_row(int64_t i, int64_t row, int64_t num_weights) {
  if (row < 0 || row >= num_weights) bad_index(i, row, num_weights);
}

// Offsets as CPU checks them (offsets[0] == 0, the last <= the indices' length), plus non-decreasing, which CPU
// assumes: a block validates the bounds of its own bags before it reads a single index of them.
struct Bags {
  const EmbeddingBagArgs& a;
  const int64_t* offsets;

  int64_t num_offsets() const { return a.num_bags + (a.include_last_offset ? 1 : 0); }
  // Where the indices after the last bag start (num_indices unless include_last_offset).
  int64_t tail() const { return a.include_last_offset ? offsets[a.num_bags] : a.num_indices; }
  // [begin, end) of bag b, checked.
  std::pair<int64_t, int64_t> range(int64_t b) const {
    const int64_t last = offsets[num_offsets() - 1];
    if (last > a.num_indices) {
      throw npu_sim::KernelError("offsets[-1] can not be greater than input's length " + std::to_string(a.num_indices) +
                                 " but got offsets[-1] of " + std::to_string(last));
    }
    if (b == 0 && offsets[0] != 0) {
      throw npu_sim::KernelError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                                 "position 0. However, got " + std::to_string(offsets[0]));
    }
    const int64_t begin = offsets[b], end = b + 1 < a.num_bags ? offsets[b + 1] : tail();
    if (begin > end) {
      throw npu_sim::KernelError("embedding_bag: offsets have to be non-decreasing, but got offsets[" +
                                 std::to_string(b) + "] = " + std::to_string(begin) + " > offsets[" +
                                 std::to_string(b + 1) + "] = " + std::to_string(end));
    }
    return {begin, end};
  }
};

// Rows are gathered at random from a table far larger than the caches: ask for the row kPrefetchAhead indices on
// while this one is added (what fbgemm's embedding kernels do), every cache line of it.
constexpr int64_t kPrefetchAhead = 64;

// One cache line towards L1. Not __builtin_prefetch: GCC 12 counts it as free of side effects, so it found
// prefetch_row pure and deleted every call (the kernel had no prefetch instruction at all, and ran at 1/4 of
// CPU's fbgemm gather rate). A volatile asm stays.
inline void prefetch_line(const char* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*p));
#else
  __builtin_prefetch(p, 0, 3);
#endif
}

template <typename T>
void prefetch_row(const EmbeddingBagArgs& a, const T* w, const int64_t* indices, int64_t i) {
  if (i >= a.num_indices) return;
  const int64_t r = indices[i];
  if (r < 0 || r >= a.num_weights || a.weight_stride1 != 1) return;
  const char* p = reinterpret_cast<const char*>(w + r * a.weight_stride0);
  const int64_t bytes = a.dim * static_cast<int64_t>(sizeof(T));
  for (int64_t off = 0; off < bytes; off += 64) prefetch_line(p + off);
}

// sum / mean of one bag's rows over columns [c0, c0 + 16 * NV) in NV vector registers (fp32 accumulation, each
// column summed in index order, as the scalar loop does), scaled and rounded once into out. Each row's lines of
// these columns kPrefetchAhead indices on are prefetched (a prefetch never faults, so an index not yet checked
// is harmless there).
// Accumulating through memory (a D-long buffer the compiler could not prove apart from the rows: a load, an add
// and a store per vector and a runtime alias check per row) ran at 1/4 of CPU's fbgemm on a cached table.
template <int NV, typename T>
void bag_columns(const EmbeddingBagArgs& a, const T* w, const int64_t* indices, const T* psw, int64_t begin,
                 int64_t end, int64_t c0, float scale, T* out) {
  constexpr int kLines = static_cast<int>((NV * 16 * sizeof(T) + 63) / 64);
  const auto base = reinterpret_cast<uintptr_t>(w + c0);
  const auto row_bytes = static_cast<uintptr_t>(a.weight_stride0) * sizeof(T);
  detail::v16sf acc[NV] = {};
  for (int64_t i = begin; i < end; ++i) {
    const int64_t ahead = std::min(i + kPrefetchAhead, a.num_indices - 1);
    const uintptr_t next = base + static_cast<uintptr_t>(indices[ahead]) * row_bytes;
    for (int l = 0; l < kLines; ++l) prefetch_line(reinterpret_cast<const char*>(next + 64 * l));
    const int64_t r = indices[i];
    if (r == a.padding_idx) continue;
    const T* row = w + r * a.weight_stride0 + c0;
    if (psw != nullptr) {
      const float sc = detail::load_as<float>(psw[i]);
      for (int v = 0; v < NV; ++v) acc[v] += sc * detail::load16(row + 16 * v);
    } else {
      for (int v = 0; v < NV; ++v) acc[v] += detail::load16(row + 16 * v);
    }
  }
  for (int v = 0; v < NV; ++v) detail::store16(out + c0 + 16 * v, acc[v] * scale);
}

// The sum / mean forward of one bag over contiguous fp32 / fp16 / bf16 rows: the columns in register-sized
// passes (64, then 16, then the last few one by one), after a pass that checks and counts the indices (no row
// is read before its index is known good).
template <typename T>
int64_t sum_bag(const EmbeddingBagArgs& a, const T* w, const int64_t* indices, const T* psw, int64_t b,
                int64_t begin, int64_t end, T* out, int64_t* offset2bag) {
  const int64_t D = a.dim;
  int64_t count = 0;
  for (int64_t i = begin; i < end; ++i) {
    offset2bag[i] = b;
    check_row(i, indices[i], a.num_weights);
    count += indices[i] != a.padding_idx;
  }
  // count == 0 gives zeros (no row was added); mean divides by the count
  const float scale =
      count == 0 ? 0.0f : (a.mode == BagMode::kMean && count > 1 ? 1.0f / static_cast<float>(count) : 1.0f);
  int64_t c0 = 0;
  for (; c0 + 64 <= D; c0 += 64) bag_columns<4>(a, w, indices, psw, begin, end, c0, scale, out);
  for (; c0 + 16 <= D; c0 += 16) bag_columns<1>(a, w, indices, psw, begin, end, c0, scale, out);
  for (; c0 < D; ++c0) {
    float acc = 0.0f;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r = indices[i];
      if (r == a.padding_idx) continue;
      const float v = detail::load_as<float>(w[r * a.weight_stride0 + c0]);
      acc += psw != nullptr ? detail::load_as<float>(psw[i]) * v : v;
    }
    out[c0] = detail::store_as<T>(acc * scale);
  }
  return count;
}

template <typename T>
void forward_bags(const EmbeddingBagArgs& a, const Bags& bags, int64_t b0, int64_t b1, const T* w,
                  const int64_t* indices, const T* psw, T* out, int64_t* offset2bag, int64_t* bag_size,
                  int64_t* max_indices, int64_t* rows_read) {
  using A = acc_t<T>;
  const int64_t D = a.dim;
  std::vector<A> acc(static_cast<size_t>(D));
  // the usual case: sum / mean over contiguous rows that accumulate in fp32, in vector registers
  constexpr bool kVec = std::is_same_v<A, float>;
  const bool vec = kVec && a.mode != BagMode::kMax && a.weight_stride1 == 1;
  for (int64_t b = b0; b < b1; ++b) {
    const auto [begin, end] = bags.range(b);
    T* o = out + b * D;
    if constexpr (kVec) {
      if (vec) {
        const int64_t count = sum_bag(a, w, indices, psw, b, begin, end, o, offset2bag);
        *rows_read += count;
        bag_size[b] = count;
        if (max_indices) max_indices[b] = count;
        continue;
      }
    }
    int64_t* mi = a.mode == BagMode::kMax ? max_indices + b * D : nullptr;
    std::fill(acc.begin(), acc.end(), A(0));
    int64_t count = 0;
    for (int64_t i = begin; i < end; ++i) {
      offset2bag[i] = b;
      prefetch_row(a, w, indices, i + kPrefetchAhead);
      const int64_t r = indices[i];
      check_row(i, r, a.num_weights);
      if (r == a.padding_idx) continue;
      const T* row = w + r * a.weight_stride0;
      if (a.mode == BagMode::kMax) {
        for (int64_t c = 0; c < D; ++c) {
          const A v = static_cast<A>(row[c * a.weight_stride1]);
          if (count == 0 || v > acc[c]) {  // NaN wins only as the first value, as in CPU's and CUDA's kernels
            acc[c] = v;
            mi[c] = r;
          }
        }
      } else if (a.weight_stride1 == 1) {  // the usual contiguous rows: a loop the compiler vectorises
        A* ac = acc.data();
        if (psw) {
          const A s = static_cast<A>(psw[i]);
          for (int64_t c = 0; c < D; ++c) ac[c] += s * static_cast<A>(row[c]);
        } else {
          for (int64_t c = 0; c < D; ++c) ac[c] += static_cast<A>(row[c]);
        }
      } else {
        const A s = psw ? static_cast<A>(psw[i]) : A(1);
        for (int64_t c = 0; c < D; ++c) acc[c] += s * static_cast<A>(row[c * a.weight_stride1]);
      }
      ++count;
    }
    *rows_read += count;
    const A scale = a.mode == BagMode::kMean && count > 1 ? A(1) / static_cast<A>(count) : A(1);
    for (int64_t c = 0; c < D; ++c) o[c] = static_cast<T>(count == 0 ? A(0) : acc[c] * scale);
    if (mi && count == 0) std::fill(mi, mi + D, int64_t{-1});
    bag_size[b] = count;
    if (max_indices && a.mode != BagMode::kMax) max_indices[b] = count;
  }
  if (b1 == a.num_bags) std::fill(offset2bag + bags.tail(), offset2bag + a.num_indices, int64_t{-1});
}

template <typename T>
void backward_rows(const EmbeddingBagArgs& a, int64_t r0, int64_t r1, const T* grad, const int64_t* indices,
                   const int64_t* offset2bag, const int64_t* bag_size, const int64_t* max_indices, const T* psw,
                   const int64_t* counts, T* gw, int64_t* adds) {
  using A = acc_t<T>;
  const int64_t D = a.dim;
  std::fill(gw + r0 * D, gw + r1 * D, T(0));
  auto add = [&](int64_t r, int64_t c, A v) { gw[r * D + c] = static_cast<T>(static_cast<A>(gw[r * D + c]) + v); };
  if (a.mode == BagMode::kMax) {
    for (int64_t b = 0; b < a.num_bags; ++b) {
      if (bag_size[b] == 0) continue;
      for (int64_t c = 0; c < D; ++c) {
        const int64_t r = max_indices[b * D + c];
        check_row(b * D + c, r, a.num_weights);
        if (r >= r0 && r < r1) {
          add(r, c, static_cast<A>(grad[b * D + c]));
          ++*adds;
        }
      }
    }
    return;
  }
  for (int64_t i = 0; i < a.num_indices; ++i) {
    const int64_t bag = offset2bag[i], r = indices[i];
    check_row(i, r, a.num_weights);
    if (bag < 0 || r < r0 || r >= r1 || r == a.padding_idx) continue;
    A s = psw ? static_cast<A>(psw[i]) : A(1);
    if (counts) s /= static_cast<A>(counts[r]);
    if (a.mode == BagMode::kMean && bag_size[bag] != 0) s /= static_cast<A>(bag_size[bag]);
    const T* g = grad + bag * D;
    for (int64_t c = 0; c < D; ++c) add(r, c, s * static_cast<A>(g[c]));
    *adds += D;
  }
}

}  // namespace

Status embedding_bag(npu_sim::Stream stream, const EmbeddingBagArgs& a, const void* weight, const int64_t* indices,
                     const int64_t* offsets, const void* per_sample_weights, void* out, int64_t* offset2bag,
                     int64_t* bag_size, int64_t* max_indices) {
  if (a.num_bags == 0) return Status::kSuccess;
  const int64_t grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(a.dim, 1));
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    return parallel_for(stream, "embedding_bag", a.num_bags, grain, [=](int64_t b0, int64_t b1,
                                                                          const npu_sim::BlockContext& ctx) {
      int64_t rows = 0;
      forward_bags<T>(a, Bags{a, offsets}, b0, b1, static_cast<const T*>(weight), indices,
                      static_cast<const T*>(per_sample_weights), static_cast<T*>(out), offset2bag, bag_size,
                      max_indices, &rows);
      // Launch records: the bags' offsets, indices and (picked) rows read; output rows and the int64 side
      // outputs written; one multiply-add per picked element.
      const int64_t es = static_cast<int64_t>(sizeof(T)), bag_cols = (b1 - b0) * a.dim;
      detail::record_vec(ctx, (b1 - b0 + 1) * 8 + rows * (8 + a.dim * es), bag_cols * es + (b1 - b0) * 16,
                         2 * rows * a.dim);
    });
  });
}

Status embedding_bag_backward(npu_sim::Stream stream, const EmbeddingBagArgs& a, const void* grad,
                              const int64_t* indices, const int64_t* offset2bag, const int64_t* bag_size,
                              const int64_t* max_indices, const void* per_sample_weights, const int64_t* counts,
                              void* grad_weight) {
  // About eight row ranges: each block scans every index (8-16 bytes each) and adds only its own rows.
  const int64_t grain = std::max<int64_t>(64, (a.num_weights + 7) / 8);
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    return parallel_for(stream, "embedding_bag_backward", a.num_weights, grain,
                        [=](int64_t r0, int64_t r1, const npu_sim::BlockContext& ctx) {
      int64_t adds = 0;  // elements of grad added to grad_weight
      backward_rows<T>(a, r0, r1, static_cast<const T*>(grad), indices, offset2bag, bag_size, max_indices,
                       static_cast<const T*>(per_sample_weights), counts, static_cast<T*>(grad_weight), &adds);
      // Launch records: the scan (indices and their bags, or the max rows), two reads and a write per added
      // element, the block's rows zeroed first.
      const int64_t es = static_cast<int64_t>(sizeof(T));
      const int64_t scanned = a.mode == BagMode::kMax ? a.num_bags * (8 + a.dim * 8) : a.num_indices * 16;
      detail::record_vec(ctx, scanned + adds * 2 * es, ((r1 - r0) * a.dim + adds) * es, 2 * adds);
    });
  });
}

Status embedding_bag_per_sample_weights_backward(npu_sim::Stream stream, const EmbeddingBagArgs& a, const void* grad,
                                                 const void* weight, const int64_t* indices,
                                                 const int64_t* offset2bag, void* out) {
  const int64_t grain = std::max<int64_t>(16, 16384 / std::max<int64_t>(a.dim, 1));
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    return parallel_for(stream, "embedding_bag_per_sample_weights_backward", a.num_indices, grain,
                        [=](int64_t i0, int64_t i1, const npu_sim::BlockContext& ctx) {
      const T* g = static_cast<const T*>(grad);
      const T* w = static_cast<const T*>(weight);
      T* o = static_cast<T*>(out);
      int64_t dots = 0;
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t bag = offset2bag[i], r = indices[i];
        check_row(i, r, a.num_weights);
        A sum = 0;
        if (bag >= 0 && r != a.padding_idx) {
          const T* gr = g + bag * a.dim;
          const T* wr = w + r * a.weight_stride0;
          for (int64_t c = 0; c < a.dim; ++c) sum += static_cast<A>(gr[c]) * static_cast<A>(wr[c * a.weight_stride1]);
          ++dots;
        }
        o[i] = static_cast<T>(sum);
      }
      const int64_t es = static_cast<int64_t>(sizeof(T));
      detail::record_vec(ctx, (i1 - i0) * 16 + dots * 2 * a.dim * es, (i1 - i0) * es, 2 * dots * a.dim);
    });
  });
}

}  // namespace npu_kernels
