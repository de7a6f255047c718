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

// dst[0, bytes) = src[0, bytes): the 64-byte-aligned body of dst with streaming stores, head and tail with
// memcpy. Call stream_fence() before another thread may read dst. (Four lines per step, loads first, was
// within 5% of this in interleaved runs: the copy is bound by memory, not by the loop.)
inline void stream_store_bytes(void* dst, const void* src, std::size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#if defined(__SSE2__)
  const std::size_t head = std::min<std::size_t>(bytes, (64 - reinterpret_cast<std::uintptr_t>(d) % 64) % 64);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  const std::size_t body = bytes & ~std::size_t{63};
  for (std::size_t i = 0; i < body; i += 64) stream_store_line(d + i, s + i);
  d += body;
  s += body;
  bytes -= body;
#endif
  std::memcpy(d, s, bytes);
}

// Orders this thread's streaming stores before its later stores (e.g. publishing completion).
inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace npu_kernels
