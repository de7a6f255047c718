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
// memcpy for a destination that is not read again soon (a collective's output): from 256 KiB up the stores
// bypass the cache (non-temporal), which saves the read-for-ownership of every destination line.
void copy_streaming(void* dst, const void* src, std::size_t bytes);

}  // namespace npu_kernels
