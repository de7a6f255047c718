// The collectives' reductions: plain loops over contiguous spans, written so gcc vectorises them at -O3
// (fp16/bf16 widen to float, combine, narrow in the same loop body); and their streaming copy.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dtype_convert.h"  // branch-free fp16/bf16 <-> fp32 in registers
#include "npu_kernels/collective_math.h"
#include "npu_kernels/stream_store.h"

namespace npu_kernels {

namespace {

using detail::bf16_bits_to_float;
using detail::float_to_bf16_bits;

template <typename A, ReduceKind K>
inline A combine(A a, A b) {
  if constexpr (K == ReduceKind::kSum) {
    return a + b;
  } else if constexpr (K == ReduceKind::kProd) {
    return a * b;
  } else if constexpr (K == ReduceKind::kMin) {
    if constexpr (std::is_floating_point_v<A>) return (a != a || b != b) ? a + b : (b < a ? b : a);  // NaN wins
    else return b < a ? b : a;
  } else if constexpr (K == ReduceKind::kMax) {
    if constexpr (std::is_floating_point_v<A>) return (a != a || b != b) ? a + b : (b > a ? b : a);
    else return b > a ? b : a;
  } else if constexpr (K == ReduceKind::kBand) {
    return a & b;
  } else if constexpr (K == ReduceKind::kBor) {
    return a | b;
  } else {
    return a ^ b;
  }
}

// dst[i] = op(a[i], s[i]); dst may be a (in place) but neither may overlap s. Only s is __restrict: the
// compiler checks dst against a at run time and vectorises both cases.
template <typename T, ReduceKind K>
void reduce_loop(void* dst_v, const void* a_v, const void* src_v, std::size_t n) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    auto* d = static_cast<uint16_t*>(dst_v);
    const auto* a = static_cast<const uint16_t*>(a_v);
    const auto* __restrict s = static_cast<const uint16_t*>(src_v);
    for (std::size_t i = 0; i < n; ++i)
      d[i] = float_to_bf16_bits(combine<float, K>(bf16_bits_to_float(a[i]), bf16_bits_to_float(s[i])));
  } else if constexpr (std::is_same_v<T, Half>) {
    auto* d = static_cast<uint16_t*>(dst_v);
    const auto* a = static_cast<const uint16_t*>(a_v);
    const auto* __restrict s = static_cast<const uint16_t*>(src_v);
    for (std::size_t i = 0; i < n; ++i)
      d[i] = detail::float_to_half_bits(combine<float, K>(detail::half_bits_to_float(a[i]), detail::half_bits_to_float(s[i])));
  } else if constexpr (std::is_same_v<T, bool>) {
    // bool: sum/max/bor = or, prod/min/band = and, bxor = xor (as gloo/NCCL treat uint8 truth values).
    auto* d = static_cast<uint8_t*>(dst_v);
    const auto* a = static_cast<const uint8_t*>(a_v);
    const auto* __restrict s = static_cast<const uint8_t*>(src_v);
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (K == ReduceKind::kSum || K == ReduceKind::kMax || K == ReduceKind::kBor) d[i] = (a[i] | s[i]) != 0;
      else if constexpr (K == ReduceKind::kBxor) d[i] = (a[i] ^ s[i]) != 0;
      else d[i] = (a[i] & s[i]) != 0;
    }
  } else {
    auto* d = static_cast<T*>(dst_v);
    const auto* a = static_cast<const T*>(a_v);
    const auto* __restrict s = static_cast<const T*>(src_v);
    for (std::size_t i = 0; i < n; ++i) d[i] = combine<T, K>(a[i], s[i]);
  }
}

// reduce_loop writing dst with streaming stores, one 64-byte line at a time computed in registers (a
// separate pass through a buffer in cache was slower than plain stores): no read-for-ownership of dst,
// ~1.4x faster than reduce_loop for fp32 when dst is not in cache. dst may equal a (each line is read
// before it is written) but must not otherwise overlap a or s.
template <typename T, ReduceKind K>
void reduce_loop_stream(void* dst_v, const void* a_v, const void* src_v, std::size_t n) {
  constexpr std::size_t sz = sizeof(T), lane = 64 / sz;
  char* d = static_cast<char*>(dst_v);
  const char* a = static_cast<const char*>(a_v);
  const char* s = static_cast<const char*>(src_v);
  const std::uintptr_t mis = reinterpret_cast<std::uintptr_t>(d) % 64;
  if (64 % sz != 0 || mis % sz != 0) return reduce_loop<T, K>(d, a, s, n);  // lines would split elements
  const std::size_t head = std::min(n, (64 - mis) % 64 / sz);
  reduce_loop<T, K>(d, a, s, head);
  std::size_t i = head;
  for (; i + lane <= n; i += lane) {
    alignas(64) unsigned char line[64];
    reduce_loop<T, K>(line, a + i * sz, s + i * sz, lane);
    stream_store_line(d + i * sz, line);
  }
  reduce_loop<T, K>(d + i * sz, a + i * sz, s + i * sz, n - i);
  stream_fence();
}

// Runs Loop<T, K> for the runtime ReduceKind `k` (the combinations that exist for T).
template <typename T, template <typename, ReduceKind> class Loop>
void reduce_typed(ReduceKind k, void* d, const void* a, const void* s, std::size_t n) {
  switch (k) {
    case ReduceKind::kSum: return Loop<T, ReduceKind::kSum>::run(d, a, s, n);
    case ReduceKind::kProd: return Loop<T, ReduceKind::kProd>::run(d, a, s, n);
    case ReduceKind::kMin:
      if constexpr (!is_complex_v<T>) return Loop<T, ReduceKind::kMin>::run(d, a, s, n);
      break;
    case ReduceKind::kMax:
      if constexpr (!is_complex_v<T>) return Loop<T, ReduceKind::kMax>::run(d, a, s, n);
      break;
    case ReduceKind::kBand:
      if constexpr (std::is_integral_v<T>) return Loop<T, ReduceKind::kBand>::run(d, a, s, n);
      break;
    case ReduceKind::kBor:
      if constexpr (std::is_integral_v<T>) return Loop<T, ReduceKind::kBor>::run(d, a, s, n);
      break;
    case ReduceKind::kBxor:
      if constexpr (std::is_integral_v<T>) return Loop<T, ReduceKind::kBxor>::run(d, a, s, n);
      break;
  }
}

template <typename T, ReduceKind K>
struct PlainLoop {
  static void run(void* d, const void* a, const void* s, std::size_t n) { reduce_loop<T, K>(d, a, s, n); }
};
template <typename T, ReduceKind K>
struct StreamLoop {
  static void run(void* d, const void* a, const void* s, std::size_t n) { reduce_loop_stream<T, K>(d, a, s, n); }
};

}  // namespace

const char* reduce_kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::kSum: return "sum";
    case ReduceKind::kProd: return "product";
    case ReduceKind::kMin: return "min";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kBand: return "band";
    case ReduceKind::kBor: return "bor";
    case ReduceKind::kBxor: return "bxor";
  }
  return "?";
}

bool reduce_supported(DType t, ReduceKind k) {
  const bool is_float = t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat32 ||
                        t == DType::kFloat64;
  const bool is_cplx = t == DType::kComplex64 || t == DType::kComplex128;
  if (k == ReduceKind::kBand || k == ReduceKind::kBor || k == ReduceKind::kBxor) return !is_float && !is_cplx;
  if (k == ReduceKind::kMin || k == ReduceKind::kMax) return !is_cplx;
  return true;
}

void reduce_into(DType t, ReduceKind k, void* dst, const void* src, std::size_t n) {
  dispatch_dtype(t, [&](auto tag) { reduce_typed<decltype(tag), PlainLoop>(k, dst, dst, src, n); });
}

void reduce_to(DType t, ReduceKind k, void* dst, const void* a, const void* src, std::size_t n) {
  dispatch_dtype(t, [&](auto tag) { reduce_typed<decltype(tag), PlainLoop>(k, dst, a, src, n); });
}

void scale_inplace(DType t, void* dst, std::size_t n, double factor) {
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, BFloat16>) {
      auto* d = static_cast<uint16_t*>(dst);
      const float f = static_cast<float>(factor);
      for (std::size_t i = 0; i < n; ++i) d[i] = float_to_bf16_bits(bf16_bits_to_float(d[i]) * f);
    } else if constexpr (std::is_same_v<T, Half>) {
      auto* d = static_cast<_Float16*>(dst);
      const float f = static_cast<float>(factor);
      for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<_Float16>(static_cast<float>(d[i]) * f);
    } else if constexpr (std::is_same_v<T, float>) {
      auto* d = static_cast<float*>(dst);
      const float f = static_cast<float>(factor);
      for (std::size_t i = 0; i < n; ++i) d[i] *= f;
    } else if constexpr (std::is_same_v<T, bool>) {
      auto* d = static_cast<uint8_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) d[i] = (d[i] != 0 && factor != 0.0);
    } else if constexpr (is_complex_v<T>) {
      auto* d = static_cast<T*>(dst);
      for (std::size_t i = 0; i < n; ++i) d[i] *= static_cast<typename T::value_type>(factor);
    } else {
      auto* d = static_cast<T*>(dst);
      for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] * factor);
    }
  });
}

void divide_inplace(DType t, void* dst, std::size_t n, long long divisor) {
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      auto* d = static_cast<T*>(dst);
      for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] / static_cast<T>(divisor));
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      auto* d = static_cast<T*>(dst);
      const T q = static_cast<T>(divisor);
      for (std::size_t i = 0; i < n; ++i) d[i] /= q;  // true division: matches sum / n computed elsewhere
    } else if constexpr (std::is_same_v<T, Half>) {
      auto* d = static_cast<_Float16*>(dst);
      const float q = static_cast<float>(divisor);
      for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<_Float16>(static_cast<float>(d[i]) / q);
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      auto* d = static_cast<uint16_t*>(dst);
      const float q = static_cast<float>(divisor);
      for (std::size_t i = 0; i < n; ++i) d[i] = float_to_bf16_bits(bf16_bits_to_float(d[i]) / q);
    } else {
      scale_inplace(t, dst, n, 1.0 / static_cast<double>(divisor));
    }
  });
}

void copy_piece(void* dst, const void* src, std::size_t bytes, std::size_t message_bytes) {
  copy_piece_to(&dst, 1, src, bytes, message_bytes);
}

void copy_piece_to(void* const* dst, std::size_t k, const void* src, std::size_t bytes, std::size_t message_bytes) {
  if (message_bytes < kStreamCopyBytes) {
    for (std::size_t j = 0; j < k; ++j) std::memcpy(dst[j], src, bytes);
    return;
  }
  const auto line_offset = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64; };
  const bool same_offset =
      std::all_of(dst, dst + k, [&](const void* d) { return line_offset(d) == line_offset(dst[0]); });
  if (same_offset) {
    stream_store_bytes_to(dst, k, src, bytes);
  } else {
    for (std::size_t j = 0; j < k; ++j) stream_store_bytes(dst[j], src, bytes);
  }
  stream_fence();  // before whatever publishes the data
}

void reduce_to_piece(DType t, ReduceKind k, void* dst, const void* a, const void* src, std::size_t n,
                     std::size_t message_bytes) {
  if (message_bytes < kStreamReduceBytes) return reduce_to(t, k, dst, a, src, n);
  dispatch_dtype(t, [&](auto tag) { reduce_typed<decltype(tag), StreamLoop>(k, dst, a, src, n); });
}

}  // namespace npu_kernels
