// Non-temporal ("streaming") stores for large outputs that are not read again soon: they skip the
// read-for-ownership of every destination line, which saves a third of the memory traffic of a copy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace npu_kernels {

// One 64-byte line: dst (64-byte aligned) = src, with a streaming store.
inline void stream_store_line(void* dst, const void* src) {
#if defined(__AVX512F__)
  _mm512_stream_si512(static_cast<__m512i*>(dst), _mm512_loadu_si512(src));
#elif defined(__AVX__)
  for (int k = 0; k < 64; k += 32) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(static_cast<char*>(dst) + k),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const char*>(src) + k)));
  }
#elif defined(__SSE2__)
  for (int k = 0; k < 64; k += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(static_cast<char*>(dst) + k),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const char*>(src) + k)));
  }
#else
  std::memcpy(dst, src, 64);
#endif
}

// dst[j][0, bytes) = src[0, bytes) for j < k, in one pass over src: the 64-byte-aligned body of every dst
// with streaming stores (each source line loaded once, then stored to each dst), head and tail with memcpy.
// The k destinations must share their offset within a 64-byte line. Call stream_fence() before another
// thread may read them. (Four lines per step, loads first, was within 5% of one line per step in
// interleaved runs: the copy is bound by memory, not by the loop.)
inline void stream_store_bytes_to(void* const* dst, std::size_t k, const void* src, std::size_t bytes) {
  if (k == 0) return;
  const char* s = static_cast<const char*>(src);
  std::size_t done = 0;
#if defined(__SSE2__)
  const std::size_t to_line = (64 - reinterpret_cast<std::uintptr_t>(dst[0]) % 64) % 64;
  const std::size_t head = std::min(bytes, to_line);
  const std::size_t body_end = head + ((bytes - head) & ~std::size_t{63});
  for (std::size_t j = 0; j < k; ++j) std::memcpy(dst[j], s, head);
  for (std::size_t i = head; i < body_end; i += 64)
    for (std::size_t j = 0; j < k; ++j) stream_store_line(static_cast<char*>(dst[j]) + i, s + i);
  done = body_end;
#endif
  for (std::size_t j = 0; j < k; ++j) std::memcpy(static_cast<char*>(dst[j]) + done, s + done, bytes - done);
}

inline void stream_store_bytes(void* dst, const void* src, std::size_t bytes) {
  stream_store_bytes_to(&dst, 1, src, bytes);
}

// Orders this thread's streaming stores before its later stores (e.g. publishing completion).
inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace npu_kernels
