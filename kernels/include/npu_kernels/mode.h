// torch.mode along one dimension (torch-free): the most frequent value of each slice and the index CPU reports
// for it, with the semantics of ATen's CPU kernel (mode_kernel_impl, ATen/native/cpu/TensorCompareKernel.cpp).
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

// The input is viewed as (outer, size, inner), contiguous, and reduced over `size`: element (o, k, i) is at
// o * size * inner + k * inner + i. For x contiguous and dim d, outer = prod(sizes[:d]), size = sizes[d],
// inner = prod(sizes[d+1:]) (a 0-dim x is outer = size = inner = 1). Every dtype CPU's mode takes: kUInt8, kInt8,
// kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64, kBool (not complex: CPU raises
// "\"mode_cpu\" not implemented for 'ComplexFloat'").
struct ModeArgs {
  DType dtype = DType::kFloat32;
  int64_t outer = 1, size = 0, inner = 1;
};

// values (outer, inner) of dtype and indices (outer, inner) int64, both contiguous and fully written (keepdim only
// changes the caller's view). Per slice, as CPU: the (value, index) pairs are put in order by std::sort comparing
// values with `<` (the same libstdc++ introsort CPU runs, so the same permutation), runs of equal (`==`) values are
// scanned in that order and the first run strictly longer than every earlier one wins; values is its value and
// indices the index of the run's last pair in that order. Consequences (checked against CPU torch 2.13):
//  - frequency ties go to the smallest value (the earliest run);
//  - for size <= 16 (insertion sort, stable) the index is the LAST occurrence of the mode; above 16 the sort is
//    not stable and the index is whichever occurrence the introsort leaves last (any occurrence, reproduced
//    exactly here, not "first" or "last");
//  - NaN compares false both ways, so it never joins a run (NaN != NaN): every NaN is a run of 1 and can only be
//    the mode when no value repeats, in which case the first run in sorted order wins (e.g. [nan, 1., nan, 1.,
//    nan] -> (nan, 0) but [nan, 1., 1.] -> (1., 2)). NaN also perturbs the ordering of the other values exactly
//    as it does on CPU;
//  - -0.0 == 0.0: they form one run, and the value written is the element at the reported index (sign kept).
// outer * inner == 0: nothing to do (kSuccess). size == 0 with outer * inner > 0: kInvalidValue (CPU raises
// IndexError "mode(): Expected reduction dim D to have non-zero size."). Also kInvalidValue for negative sizes,
// another dtype or null pointers.
npu_sim::Status mode(npu_sim::Stream stream, const ModeArgs& a, const void* input, void* values, int64_t* indices);

}  // namespace npu_kernels
