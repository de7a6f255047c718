// Line-wise ordering kernels: sort (radix / counting / comparison / counted ranks), topk (insertion or bounded
// selection), kthvalue / median (radix select, counted ranks), unique, bincount, searchsorted (npu_kernels/index.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "npu_kernels/elementwise.h"
#include "npu_kernels/index.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {

namespace {

// Comparisons a comparison sort of n keys is counted with: n * ceil(log2 n), at least n.
int64_t sort_ops(int64_t n) {
  int64_t lg = 0;
  while ((int64_t(1) << lg) < n) ++lg;
  return n * std::max<int64_t>(1, lg);
}

// PyTorch's order: NaN is greater than every number (ascending puts NaNs last, descending first).
template <typename C>
bool less_nan_last(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// The unsigned integer type of a key's width.
template <typename C>
using radix_t = std::conditional_t<sizeof(C) == 1, uint8_t, std::conditional_t<sizeof(C) == 2, uint16_t,
                std::conditional_t<sizeof(C) == 4, uint32_t, uint64_t>>>;

// An order-preserving unsigned image of a key in PyTorch's order: integers with the sign bit flipped, floats by
// their bits with negatives inverted, -0.0 as +0.0 (they compare equal) and every NaN as the largest; inverted
// for a descending order.
template <typename C>
radix_t<C> radix_key(C v, bool descending) {
  using U = radix_t<C>;
  constexpr U top = U(1) << (8 * sizeof(C) - 1);
  U u;
  if constexpr (std::is_floating_point_v<C>) {
    // integer selects only (cmov, or a blend in a vector loop): a float compare here compiled to a branch, which
    // a line of many zeros mispredicted on every other element
    constexpr U inf = std::is_same_v<C, float> ? U(0x7f800000u) : U(0x7ff0000000000000ull);
    std::memcpy(&u, &v, sizeof(C));
    const bool nan = (u & ~top) > inf;
    u = u == top ? U(0) : u;                                       // -0.0 as +0.0
    const U image = u ^ (U(U(0) - U(u >> (8 * sizeof(C) - 1))) | top);  // negatives inverted, positives' top bit set
    u = nan ? U(~U(0)) : image;
  } else if constexpr (std::is_same_v<C, bool>) {
    u = v ? 1 : 0;
  } else {
    u = static_cast<U>(v);
    if constexpr (std::is_signed_v<C>) u ^= top;
  }
  return descending ? U(~u) : u;
}

// An element of a line being ordered: the unsigned image of its key (radix_key: the line's order, NaN and -0.0
// placed, descending inverted) and its position in the line (int32 where the line allows, which halves the
// working set). Ordered by (image, position) with plain integer compares, std::sort and std::nth_element over a
// contiguous array of these give the order a stable sort gives, without loading keys through an index.
template <typename C, typename P>
struct Keyed {
  radix_t<C> key;
  P pos;
  bool operator<(const Keyed& o) const { return key < o.key || (key == o.key && pos < o.pos); }
};

// Elements a selection buffer takes beyond the k it keeps before it is cut back.
constexpr int64_t kSelectChunk = 32;

// The first k elements of a line in (key, position) order, left (unsorted) in buf: streamed through a buffer of
// k + max(k, kSelectChunk) elements that is cut back to its best k whenever it fills. After a cut, an element
// whose key image is not below the k-th kept one's is passed over with one integer compare (an equal key comes
// later in the line, so after it), so a small k over a long line takes O(k) memory and one compare per element.
template <typename C, typename P, typename Load>
void select_first_k(int64_t len, int64_t k, bool descending, Load load, std::vector<Keyed<C, P>>& buf) {
  const int64_t cap = std::min(len, k + std::max(k, kSelectChunk));
  buf.clear();
  buf.reserve(cap);
  auto kth = std::numeric_limits<radix_t<C>>::max();
  bool cut_once = false;
  auto cut = [&] {
    if (static_cast<int64_t>(buf.size()) > k) {
      std::nth_element(buf.begin(), buf.begin() + (k - 1), buf.end());
      kth = buf[k - 1].key;
      buf.resize(k);
      cut_once = true;
    }
  };
  constexpr int64_t kBlock = 64;  // key images computed a block at a time (a vector loop), then filtered
  radix_t<C> keys[kBlock] = {};
  for (int64_t j0 = 0; j0 < len; j0 += kBlock) {
    const int64_t n = std::min(kBlock, len - j0);
    for (int64_t t = 0; t < n; ++t) keys[t] = radix_key<C>(load(j0 + t), descending);
    if (cut_once) {  // most blocks of a long line hold no candidate: one vector compare passes them over
      int below = 0;
      for (int64_t t = 0; t < kBlock; ++t) below += keys[t] < kth ? 1 : 0;  // (a stale tail past n: checked below)
      if (below == 0) continue;
    }
    for (int64_t t = 0; t < n; ++t) {
      if (cut_once && keys[t] >= kth) continue;
      buf.push_back({keys[t], static_cast<P>(j0 + t)});
      if (static_cast<int64_t>(buf.size()) == cap) cut();
    }
  }
  cut();
}

// k at most this small is selected by insertion into a sorted array (select_small_k), on lines shorter than
// kRadixMinLen.
constexpr int64_t kSmallK = 16;

// The first k (<= kSmallK) elements of a line in (key, position) order, sorted into best: the first k elements
// inserted, then each later one whose key image is below the k-th kept one's inserted in its place (an equal key
// comes later in the line, so after it). One compare per element and few insertions over random keys (about
// k ln(len / k)), where a buffer cut back by nth_element pays a selection per kSelectChunk candidates.
template <typename C, typename P, typename Load>
void select_small_k(int64_t len, int64_t k, bool descending, Load load, Keyed<C, P>* best) {
  int64_t kept = 0;
  auto insert = [&](radix_t<C> key, int64_t j) {
    int64_t at = std::min(kept, k - 1);  // (full: the last one drops out)
    while (at > 0 && key < best[at - 1].key) {
      best[at] = best[at - 1];
      --at;
    }
    best[at] = {key, static_cast<P>(j)};
    kept = std::min(kept + 1, k);
  };
  int64_t j = 0;
  for (; j < std::min(len, k); ++j) insert(radix_key<C>(load(j), descending), j);
  for (; j < len; ++j) {
    const radix_t<C> key = radix_key<C>(load(j), descending);
    if (key < best[k - 1].key) insert(key, j);
  }
}

// A 1-byte key's counting bucket in ascending order: 0 .. 255 (signed types shifted by 128).
template <typename T>
int byte_bucket(T v) {
  return std::is_signed_v<T> ? static_cast<int>(v) + 128 : static_cast<int>(v);
}

// A line of a 1-byte type (bool, int8, uint8) sorted by counting: one pass counts each key, one writes every
// element at its key's next slot, in position order (so stable), O(len) with no buffer.
template <typename T, typename Store>
void counting_sort_line(int64_t len, bool descending, const T* src, int64_t stride, Store store) {
  auto bucket = [descending](T v) { return descending ? 255 - byte_bucket(v) : byte_bucket(v); };
  int64_t next[256] = {};
  for (int64_t j = 0; j < len; ++j) ++next[bucket(src[j * stride])];
  int64_t at = 0;
  for (int64_t& n : next) at += std::exchange(n, at);
  for (int64_t j = 0; j < len; ++j) {
    const T v = src[j * stride];
    store(next[bucket(v)]++, v, j);
  }
}

// A line in (key, position) order, by an LSD radix sort on the keys' unsigned images: stable by construction, so
// equal keys keep their positions' order. A first read pass finds the bits in which the keys differ, and only
// the bytes that vary are counted and passed (bfloat16 and float16 keys widened to float, small-range integers).
// Keys that vary in one byte (labels, small-range int64) are sorted by counting straight from the input, with no
// (key, position) arrays. Leaves the positions in `pos`.
template <typename C, typename P, typename Load>
void radix_sort_line(int64_t len, bool descending, Load load, std::vector<P>& pos) {
  using U = radix_t<C>;
  constexpr int kBytes = sizeof(U);
  U ones = 0, all = ~U(0);
  for (int64_t j = 0; j < len; ++j) {
    const U u = radix_key<C>(load(j), descending);
    ones |= u;
    all &= u;
  }
  int varying[kBytes], nvary = 0;
  for (int d = 0; d < kBytes; ++d) {
    if (((ones ^ all) >> (8 * d)) & 0xff) varying[nvary++] = d;
  }
  pos.resize(len);
  if (nvary <= 1) {
    const int shift = nvary == 0 ? 0 : 8 * varying[0];
    auto bucket = [&](int64_t j) { return static_cast<int>((radix_key<C>(load(j), descending) >> shift) & 0xff); };
    int64_t next[256] = {};
    for (int64_t j = 0; j < len; ++j) ++next[bucket(j)];
    int64_t at = 0;
    for (int64_t& n : next) at += std::exchange(n, at);
    for (int64_t j = 0; j < len; ++j) pos[next[bucket(j)]++] = static_cast<P>(j);
    return;
  }
  struct Item {
    U key;
    P pos;
  };
  std::vector<Item> a(len), b(len);
  std::vector<std::array<int64_t, 256>> count(nvary);
  for (auto& c : count) c.fill(0);
  for (int64_t j = 0; j < len; ++j) {
    const U u = radix_key<C>(load(j), descending);
    a[j] = {u, static_cast<P>(j)};
    for (int v = 0; v < nvary; ++v) ++count[v][(u >> (8 * varying[v])) & 0xff];
  }
  for (int v = 0; v < nvary; ++v) {
    const int d = varying[v];
    auto& c = count[v];
    int64_t at = 0;
    for (int64_t& n : c) at += std::exchange(n, at);
    for (const Item& it : a) b[c[(it.key >> (8 * d)) & 0xff]++] = it;
    a.swap(b);
  }
  for (int64_t j = 0; j < len; ++j) pos[j] = a[j].pos;
}

// Lines at least this long are sorted by radix (below it, std::sort over (key, position) is as fast).
constexpr int64_t kRadixMinLen = 4096;

// The position of a line's rank-th (1-based) element in ascending (key, position) order, by a radix select on the
// keys' unsigned images: one pass counts the images' top digit (8-16 bits, by the line's length) and finds the bits
// in which the keys differ; where those lie below the top digit (small-range integers), a second pass counts the
// digit just under the highest varying bit. The rank's bucket then holds the element: if the digit left no bit
// varying, a pass finds its rank-th member in position order; otherwise the bucket's members are gathered (in
// position order) and narrowed the same way, digit by digit under their own highest varying bit, until one key is
// left (its r-th member in order is the answer) or few enough members for nth_element. Two or three passes over
// the line, where nth_element over all of it takes several and branches on every compare.
template <typename C, typename P, typename Load>
int64_t radix_select(int64_t len, int64_t rank, Load load, std::vector<Keyed<C, P>>& cand,
                     std::vector<std::make_unsigned_t<P>>& count) {
  using U = radix_t<C>;
  constexpr int kBits = 8 * sizeof(U);
  int digit = 8;
  while (digit < 16 && (int64_t(1) << (digit + 5)) <= len) ++digit;  // ~32 elements per bucket, at most 2^16 buckets
  digit = std::min(digit, kBits);
  auto image = [&](int64_t j) { return radix_key<C>(load(j), false); };
  auto low_bits = [](int n) { return n >= kBits ? U(~U(0)) : U((U(1) << n) - 1); };
  auto top_bit = [](U v) {
    int high = kBits - 1;
    while (!((v >> high) & 1)) --high;
    return high;
  };
  // The counted bucket that holds 0-based rank r (r becomes the rank within it).
  auto rank_bucket = [&](int64_t& r) {
    U b = 0;
    while (r >= int64_t(count[b])) r -= count[b++];
    return b;
  };
  count.assign(size_t(1) << digit, 0);
  int shift = kBits - digit, width = digit;
  U ones = 0, all = ~U(0);
  for (int64_t j = 0; j < len; ++j) {
    const U u = image(j);
    ones |= u;
    all &= u;
    ++count[u >> shift];
  }
  const U vary = ones ^ all;
  if (vary == 0) return rank - 1;  // every key equal: positions in order
  const int high = top_bit(vary);
  if (high < shift) {  // the keys differ only below the top digit: count the digit under the highest varying bit
    shift = std::max(0, high + 1 - digit);
    width = high + 1 - shift;
    std::fill(count.begin(), count.end(), 0);
    for (int64_t j = 0; j < len; ++j) ++count[(image(j) >> shift) & low_bits(width)];
  }
  int64_t r = rank - 1;  // 0-based rank, then within the bucket
  U b = rank_bucket(r);
  auto in_bucket = [&](U u) { return U((u >> shift) & low_bits(width)) == b; };
  if ((vary & low_bits(shift)) == 0) {  // the bucket is one key: its r-th member in position order
    for (int64_t j = 0;; ++j) {
      if (in_bucket(image(j)) && r-- == 0) return j;
    }
  }
  cand.resize(count[b]);  // (gathered without a branch: each element is written at the next slot, the bucket's kept)
  size_t n = 0;
  for (int64_t j = 0; j < len && n < count[b]; ++j) {
    const U u = image(j);
    cand[n] = {u, static_cast<P>(j)};
    n += in_bucket(u) ? 1 : 0;
  }
  cand.resize(n);
  constexpr size_t kFew = 64;  // below this many members, nth_element
  while (cand.size() > kFew) {
    U c_ones = 0, c_all = ~U(0);
    for (const auto& c : cand) {
      c_ones |= c.key;
      c_all &= c.key;
    }
    if (c_ones == c_all) return cand[r].pos;  // one key left: its members are in position order
    const int h = top_bit(c_ones ^ c_all);
    shift = std::max(0, h + 1 - digit);
    width = h + 1 - shift;
    std::fill(count.begin(), count.begin() + (size_t(1) << width), 0);
    for (const auto& c : cand) ++count[(c.key >> shift) & low_bits(width)];
    b = rank_bucket(r);
    n = 0;
    for (const auto& c : cand) {  // (in place, in order, without a branch)
      cand[n] = c;
      n += in_bucket(c.key) ? 1 : 0;
    }
    cand.resize(n);
  }
  std::nth_element(cand.begin(), cand.begin() + r, cand.end());
  return cand[r].pos;
}

// Lines at most this long are ordered by counting ranks (rank_line) when sorted or cut to k > kSmallK; lines up to
// half as long when selected (kthvalue, median); a topk of k <= kSmallK only on lines of at most kSmallK.
constexpr int64_t kRankMaxLen = 64;
// Lines longer than kRankMaxLen / 2 are selected (kthvalue, median) by radix (radix_select).
constexpr int64_t kRadixSelectMinLen = kRankMaxLen / 2 + 1;

// Each element's 0-based place in a short line's (key, position) order: the number of keys below its own plus the
// equal keys before it. len^2 integer compares with no branch (a vector loop per element), where a comparison sort
// or selection of a few dozen elements branches unpredictably on each of its ~len log len compares.
template <typename C, typename Load>
void rank_line(int64_t len, bool descending, Load load, int32_t* rank) {
  radix_t<C> key[kRankMaxLen];
  for (int64_t j = 0; j < len; ++j) key[j] = radix_key<C>(load(j), descending);
  for (int64_t i = 0; i < len; ++i) {
    const radix_t<C> ki = key[i];
    int32_t below = 0;
    for (int64_t j = 0; j < len; ++j) below += (key[j] < ki) | ((key[j] == ki) & (j < i));
    rank[i] = below;
  }
}

// What order_lines writes of each line: its first k elements in order (sort, topk), or one element into a size-1
// slot along dim: the k-th smallest (1-based), or the median of the line (the ((n - 1) / 2)-th smallest of its n
// non-NaN elements; median() gives a line with a NaN its first NaN, nanmedian() skips NaNs unless all are).
enum class Pick { kFirstK, kKth, kMedian, kNanMedian };

// The 1-based rank the line's picked element has, or -1 - j where it is the NaN at position j.
template <typename C, typename Load>
int64_t pick_rank(Pick pick, int64_t len, int64_t k, Load load) {
  if (pick == Pick::kKth) return k;
  int64_t nans = 0, first_nan = -1;
  if constexpr (std::is_floating_point_v<C>) {
    for (int64_t j = 0; j < len; ++j) {
      if (std::isnan(load(j))) {
        if (nans++ == 0) first_nan = j;
      }
    }
  }
  const int64_t valid = len - nans;
  if ((pick == Pick::kMedian && nans > 0) || valid == 0) return -1 - first_nan;
  return (valid - 1) / 2 + 1;
}

// Lines [b, e) of `in` along dim, each written as `pick` says. Picks: counted ranks on short lines, a radix select
// on the others. First k: counted ranks on short lines (and up to kRankMaxLen when k > kSmallK), insertion for a
// small k, a radix sort where most of a long line is kept, else a bounded selection then std::sort.
template <typename T, typename P>
void order_range(const TensorDesc& in, int dim, bool descending, const TensorDesc& values, const TensorDesc& indices,
                 int64_t k, Pick pick, int64_t b, int64_t e) {
  using C = compute_t<T>;
  const int64_t len = in.sizes[dim], ist = in.strides[dim], vst = values.strides[dim], xst = indices.strides[dim];
  TensorDesc oin = in, ov = values, oi = indices;
  oin.sizes[dim] = ov.sizes[dim] = oi.sizes[dim] = 1;
  const T* src = static_cast<const T*>(in.data);
  T* vals = static_cast<T*>(values.data);
  int64_t* idxs = static_cast<int64_t*>(indices.data);
  std::vector<Keyed<C, P>> buf;
  std::vector<P> sorted;
  std::vector<std::make_unsigned_t<P>> counts;
  Keyed<C, P> small[kSmallK];
  StridedWalker wi(oin, b), wv(ov, b), wx(oi, b);
  for (int64_t o = b; o < e; ++o, wi.next(), wv.next(), wx.next()) {
    const T* line = src + wi.offset();
    T* v = vals + wv.offset();
    int64_t* x = idxs ? idxs + wx.offset() : nullptr;
    auto load = [&](int64_t j) { return static_cast<C>(line[j * ist]); };
    if constexpr (sizeof(T) == 1) {
      if (pick == Pick::kFirstK && k == len) {
        counting_sort_line<T>(len, descending, line, ist, [&](int64_t slot, T value, int64_t j) {
          v[slot * vst] = value;
          x[slot * xst] = j;
        });
        continue;
      }
    }
    if (pick != Pick::kFirstK) {
      const int64_t rank = pick_rank<C>(pick, len, k, load);
      int64_t at = -1 - rank;  // (a NaN's position)
      if (rank > 0 && len < kRadixSelectMinLen) {
        int32_t place[kRankMaxLen];
        rank_line<C>(len, false, load, place);
        at = std::find(place, place + len, int32_t(rank - 1)) - place;
      } else if (rank > 0) {
        at = radix_select<C, P>(len, rank, load, buf, counts);
      }
      *v = line[at * ist];
      if (x) *x = at;
      continue;
    }
    if (len <= kSmallK || (k > kSmallK && len <= kRankMaxLen)) {
      int32_t place[kRankMaxLen];
      rank_line<C>(len, descending, load, place);
      for (int64_t j = 0; j < len; ++j) {
        if (place[j] < k) {
          v[place[j] * vst] = line[j * ist];
          x[place[j] * xst] = j;
        }
      }
      continue;
    }
    if (len >= kRadixMinLen && k * 4 >= len) {  // (most of the line is kept: sort all of it)
      radix_sort_line<C, P>(len, descending, load, sorted);
      for (int64_t j = 0; j < k; ++j) {
        v[j * vst] = line[sorted[j] * ist];
        x[j * xst] = sorted[j];
      }
      continue;
    }
    // (a long line: select_first_k passes over the blocks without a candidate with one vector compare each)
    const bool by_insertion = k <= kSmallK && len < kRadixMinLen;
    if (by_insertion) {
      select_small_k<C, P>(len, k, descending, load, small);
    } else {
      select_first_k<C, P>(len, k, descending, load, buf);
      std::sort(buf.begin(), buf.end());
    }
    const Keyed<C, P>* first = by_insertion ? small : buf.data();
    for (int64_t j = 0; j < k; ++j) {
      v[j * vst] = line[first[j].pos * ist];
      x[j * xst] = first[j].pos;
    }
  }
}

// sort_lines, kth_lines and median_lines: one block per range of lines.
npu_sim::Status order_lines(npu_sim::Stream stream, const TensorDesc& in, int dim, bool descending,
                            const TensorDesc& values, const TensorDesc& indices, int64_t k, Pick pick, const char* op) {
  if (values.dtype != in.dtype || (indices.data != nullptr && indices.dtype != DType::kInt64)) {
    return npu_sim::invalid_value(std::string(op) + ": values must have the input's dtype " + dtype_name(in.dtype) +
                                  " (got " + dtype_name(values.dtype) + ") and indices int64 (got " +
                                  dtype_name(indices.dtype) + ")");
  }
  TensorDesc outer = in;
  outer.sizes[dim] = 1;
  const int64_t lines = outer.numel();
  if (lines == 0 || k == 0) return npu_sim::Status::kSuccess;
  const int64_t len = std::max<int64_t>(1, in.sizes[dim]);
  // Launch records, per line: its len keys read (into a block-local buffer), then the kept values read again
  // from the input by position, and the kept values plus int64 indices written; Vector ops: len * ceil(log2 len)
  // comparisons for a sort, len for a selection (sort_ops), plus len for a median's NaN count.
  const bool one = pick != Pick::kFirstK;
  const int64_t kept = one ? 1 : k, es = static_cast<int64_t>(dtype_size(in.dtype));
  const int64_t line_rd = (in.sizes[dim] + kept) * es, line_wr = kept * (es + (indices.data ? 8 : 0));
  const int64_t line_ops = (one || k < len ? in.sizes[dim] + sort_ops(kept) : sort_ops(in.sizes[dim])) +
                           (pick == Pick::kMedian || pick == Pick::kNanMedian ? in.sizes[dim] : 0);
  const bool narrow = len <= std::numeric_limits<int32_t>::max();
  return parallel_for(stream, op, lines, std::max<int64_t>(1, 4096 / len),
                      [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        detail::record_vec(ctx, (e - b) * line_rd, (e - b) * line_wr, (e - b) * line_ops);
                        const bool known = dispatch_dtype(in.dtype, [&](auto tag) {
                          using T = decltype(tag);
                          if constexpr (is_complex_v<T>) {
                            throw npu_sim::KernelError(std::string(op) + ": complex tensors are not ordered");
                          } else if (narrow) {
                            order_range<T, int32_t>(in, dim, descending, values, indices, k, pick, b, e);
                          } else {
                            order_range<T, int64_t>(in, dim, descending, values, indices, k, pick, b, e);
                          }
                        });
                        if (!known) throw npu_sim::KernelError(std::string(op) + ": no kernel for this dtype");
                      });
}

}  // namespace

npu_sim::Status sort_lines(npu_sim::Stream stream, const TensorDesc& in, int dim, bool descending,
                           const TensorDesc& values, const TensorDesc& indices, int64_t k, const char* op) {
  return order_lines(stream, in, dim, descending, values, indices, k, Pick::kFirstK, op);
}

npu_sim::Status kth_lines(npu_sim::Stream stream, const TensorDesc& in, int dim, const TensorDesc& values,
                          const TensorDesc& indices, int64_t k, const char* op) {
  return order_lines(stream, in, dim, /*descending=*/false, values, indices, k, Pick::kKth, op);
}

npu_sim::Status median_lines(npu_sim::Stream stream, const TensorDesc& in, int dim, const TensorDesc& values,
                             const TensorDesc& indices, bool ignore_nan, const char* op) {
  return order_lines(stream, in, dim, /*descending=*/false, values, indices, /*k=*/1,
                     ignore_nan ? Pick::kNanMedian : Pick::kMedian, op);
}

}  // namespace npu_kernels

namespace npu_kernels {

npu_sim::Status unique_sorted(npu_sim::Stream stream, const TensorDesc& in, void* values, int64_t* inverse,
                              int64_t* counts, int64_t* num_unique) {
  // One block: a radix sort (stable), then one sweep assigns slots (1-byte types: a count per value and a second
  // read for the inverse); the caller syncs for the count anyway.
  // Launch records: every element read once (keys sorted in a block-local buffer); the unique values, their
  // int64 counts (when asked), one int64 inverse index per element (when asked) and the int64 number of
  // uniques written; Vector ops: the sort's comparisons plus one per element for the sweep.
  return npu_sim::launch_kernel(stream, "unique", 1, [in, values, inverse, counts, num_unique](const npu_sim::BlockContext& ctx) {
    dispatch_dtype(in.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_complex_v<T>) {
        throw npu_sim::KernelError("unique: complex tensors are not supported");
      } else {
        using C = compute_t<T>;
        const int64_t n = in.numel();
        const T* src = static_cast<const T*>(in.data);
        const int64_t es = sizeof(T);
        if constexpr (sizeof(T) == 1) {  // bool, int8, uint8: a count per value, no sort
          constexpr int kBias = std::is_signed_v<T> ? 128 : 0;
          int64_t count[256] = {}, slot[256] = {};
          StridedWalker w(in, 0);
          for (int64_t i = 0; i < n; ++i, w.next()) ++count[static_cast<int>(src[w.offset()]) + kBias];
          int64_t u = 0;
          for (int b = 0; b < 256; ++b) {
            if (count[b] == 0) continue;
            slot[b] = u;
            static_cast<T*>(values)[u] = static_cast<T>(b - kBias);
            if (counts) counts[u] = count[b];
            ++u;
          }
          if (inverse) {
            StridedWalker wi(in, 0);
            for (int64_t i = 0; i < n; ++i, wi.next()) inverse[i] = slot[static_cast<int>(src[wi.offset()]) + kBias];
          }
          *num_unique = u;
          detail::record_vec(ctx, n * es * (inverse ? 2 : 1), u * es + (counts ? u * 8 : 0) + (inverse ? n * 8 : 0) + 8,
                             2 * n);
          return;
        }
        std::vector<C> key(n);
        StridedWalker w(in, 0);
        for (int64_t i = 0; i < n; ++i, w.next()) key[i] = static_cast<C>(src[w.offset()]);
        std::vector<int64_t> order;
        radix_sort_line<C, int64_t>(n, /*descending=*/false, [&](int64_t i) { return key[i]; }, order);
        T* vals = static_cast<T*>(values);
        int64_t k = -1;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t i = order[j];
          // NaNs compare unequal, so each one is its own value (as on CPU)
          if (k < 0 || !(key[order[j - 1]] == key[i])) {
            ++k;
            vals[k] = static_cast<T>(key[i]);
            if (counts) counts[k] = 0;
          }
          if (counts) ++counts[k];
          if (inverse) inverse[i] = k;
        }
        *num_unique = k + 1;
        const int64_t u = k + 1;
        detail::record_vec(ctx, n * es, u * es + (counts ? u * 8 : 0) + (inverse ? n * 8 : 0) + 8, sort_ops(n) + n);
      }
    });
  });
}

npu_sim::Status bincount_max(npu_sim::Stream stream, const TensorDesc& in, int64_t* max_out) {
  // Launch records: every element read, the int64 maximum written; 1 Vector op per element.
  return npu_sim::launch_kernel(stream, "bincount", 1, [in, max_out](const npu_sim::BlockContext& ctx) {
    detail::record_vec(ctx, in.numel() * static_cast<int64_t>(dtype_size(in.dtype)), 8, in.numel());
    int64_t m = -1;
    dispatch_dtype(in.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T>) {
        const T* p = static_cast<const T*>(in.data);
        StridedWalker w(in, 0);
        for (int64_t i = 0; i < in.numel(); ++i, w.next()) {
          const int64_t v = static_cast<int64_t>(p[w.offset()]);
          if (v < 0) throw npu_sim::KernelError("bincount(): input must contain only non-negative values, got " + std::to_string(v));
          m = std::max(m, v);
        }
      } else {
        throw npu_sim::KernelError("bincount(): only integral inputs are supported");
      }
    });
    *max_out = m;
  });
}

npu_sim::Status bincount(npu_sim::Stream stream, const TensorDesc& in, const TensorDesc& weights, const TensorDesc& out) {
  // Launch records: per element the input (and its weight) read, and its bin read, added to and written
  // back; 1 Vector op per element.
  return npu_sim::launch_kernel(stream, "bincount", 1, [in, weights, out](const npu_sim::BlockContext& ctx) {
    {
      const int64_t n = in.numel(), os = static_cast<int64_t>(dtype_size(out.dtype));
      const int64_t per = static_cast<int64_t>(dtype_size(in.dtype)) +
                          (weights.ndim == 0 ? 0 : static_cast<int64_t>(dtype_size(weights.dtype))) + os;
      detail::record_vec(ctx, n * per, n * os, n);
    }
    dispatch_dtype(out.dtype, [&](auto otag) {
      using O = decltype(otag);
      if constexpr (!is_complex_v<O>) {
        O* o = static_cast<O*>(out.data);
        dispatch_dtype(in.dtype, [&](auto itag) {
          using I = decltype(itag);
          if constexpr (std::is_integral_v<I>) {
            const I* p = static_cast<const I*>(in.data);
            StridedWalker w(in, 0);
            if (weights.ndim == 0) {
              for (int64_t i = 0; i < in.numel(); ++i, w.next()) { O& slot = o[static_cast<int64_t>(p[w.offset()])]; slot = convert<O>(convert<double>(slot) + 1.0); }
              return;
            }
            dispatch_dtype(weights.dtype, [&](auto wtag) {
              using W = decltype(wtag);
              if constexpr (!is_complex_v<W>) {
                const W* wt = static_cast<const W*>(weights.data);
                StridedWalker ww(weights, 0);
                for (int64_t i = 0; i < in.numel(); ++i, w.next(), ww.next()) {
                  O& slot = o[static_cast<int64_t>(p[w.offset()])];
                  slot = convert<O>(convert<double>(slot) + convert<double>(wt[ww.offset()]));
                }
              } else {
                throw npu_sim::KernelError("bincount: complex weights are not supported");  // (not zero counts)
              }
            });
          } else {
            throw npu_sim::KernelError("bincount: the input must be of an integral dtype");
          }
        });
      } else {
        throw npu_sim::KernelError("bincount: a complex output is not supported");
      }
    });
  });
}

npu_sim::Status searchsorted(npu_sim::Stream stream, const TensorDesc& boundaries, const TensorDesc& values,
                             const TensorDesc& out, bool right) {
  const int64_t m = values.ndim == 0 ? 1 : values.sizes[values.ndim - 1];
  return parallel_for(stream, "searchsorted", values.numel(), 4096,
                      [boundaries, values, out, right, m](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
    const int64_t len = boundaries.ndim == 0 ? 1 : boundaries.sizes[boundaries.ndim - 1];
    const bool shared = boundaries.numel() == len;
    {
      // Launch records: per value, the value and ceil(log2(len + 1)) boundaries read (a binary search's
      // probes, the shared row re-read per value), its index written; 1 Vector op per probe.
      int64_t probes = 0;
      while ((int64_t(1) << probes) < len + 1) ++probes;
      const int64_t es = static_cast<int64_t>(dtype_size(values.dtype));
      detail::record_vec(ctx, (e - b) * (1 + probes) * es, (e - b) * (out.dtype == DType::kInt32 ? 4 : 8),
                         (e - b) * std::max<int64_t>(1, probes));
    }
    dispatch_dtype(values.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_complex_v<T>) {
        throw npu_sim::KernelError("searchsorted: complex tensors are not supported");
      } else {
        using C = compute_t<T>;
        const T* bd = static_cast<const T*>(boundaries.data);
        const T* v = static_cast<const T*>(values.data);
        for (int64_t i = b; i < e; ++i) {
          const T* row = bd + (shared ? 0 : (i / m) * len);
          const C x = static_cast<C>(v[i]);
          int64_t lo = 0, hi = len;
          while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            const C y = static_cast<C>(row[mid]);
            const bool go_right = right ? !less_nan_last(x, y) : less_nan_last(y, x);
            if (go_right) lo = mid + 1; else hi = mid;
          }
          if (out.dtype == DType::kInt32) {
            static_cast<int32_t*>(out.data)[i] = static_cast<int32_t>(lo);
          } else {
            static_cast<int64_t*>(out.data)[i] = lo;
          }
        }
      }
    });
  });
}

}  // namespace npu_kernels
