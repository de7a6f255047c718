// Element math and bulk copies of the collectives (torch-free): dst = op(dst, src) and in-place scaling for
// every dtype, with fp32 arithmetic for fp16/bf16 (converted in registers, rounded once per call).
#pragma once

#include <cstddef>

#include "npu_kernels/dtype.h"

namespace npu_kernels {

enum class ReduceKind : int { kSum = 0, kProd = 1, kMin = 2, kMax = 3, kBand = 4, kBor = 5, kBxor = 6 };

const char* reduce_kind_name(ReduceKind k);
// False if `k` is not defined for `t` (bitwise ops on floats, min/max on complex).
bool reduce_supported(DType t, ReduceKind k);
// dst[i] = op(dst[i], src[i]) for i < n. Runs on the calling thread (the collective's worker).
void reduce_into(DType t, ReduceKind k, void* dst, const void* src, std::size_t n);
// dst[i] = op(a[i], src[i]) (one pass instead of a copy then reduce_into); dst may equal a, src overlaps neither.
void reduce_to(DType t, ReduceKind k, void* dst, const void* a, const void* src, std::size_t n);
// dst[i] = dst[i] * factor (floating types; integers: truncating division when `divide` is set).
void scale_inplace(DType t, void* dst, std::size_t n, double factor);
void divide_inplace(DType t, void* dst, std::size_t n, long long divisor);
// Copies one piece of a collective's message of `message_bytes`. Messages from kStreamCopyBytes up are
// written with non-temporal stores (no read-for-ownership of the destination lines, and they would only
// evict the cache); smaller ones with plain stores, since their output fits the last-level cache and is
// often read soon (a DDP bucket by the optimizer). Deciding per piece instead (from 256 KiB) made a 1 MiB
// broadcast 161 us instead of 87 us and a 4 MiB one 340 instead of 233; streaming from 8 MiB instead of
// 16 made a 2-rank all_gather of 8 MiB per rank 1.28 ms instead of 1.08 and an 8 MiB broadcast 340 us
// instead of 141 (their buffers still fit the L3), while from 16 MiB per rank streaming wins.
constexpr std::size_t kStreamCopyBytes = std::size_t{16} << 20;
void copy_piece(void* dst, const void* src, std::size_t bytes, std::size_t message_bytes);
// copy_piece into each of dst[0, k); when streaming, in one pass that loads each source line once (a
// 2-rank all_gather pushing 128 MiB into both outputs: 6-9% faster than two passes over 64 KiB pieces).
void copy_piece_to(void* const* dst, std::size_t k, const void* src, std::size_t bytes, std::size_t message_bytes);
// reduce_to for one piece of a collective's output of `message_bytes`, with streaming stores from
// kStreamReduceBytes up (dst may equal a, as for reduce_to). A reduction reads two inputs per output
// byte, so streaming its output pays off earlier than a copy's (2-rank reduce_scatter of 8 MiB per rank:
// 0.54-0.65 ms instead of 1.0-1.1).
constexpr std::size_t kStreamReduceBytes = std::size_t{8} << 20;
void reduce_to_piece(DType t, ReduceKind k, void* dst, const void* a, const void* src, std::size_t n,
                     std::size_t message_bytes);

}  // namespace npu_kernels
