// Kernel-side view of a tensor (torch-free): raw device pointer, dtype, sizes and strides in elements,
// plus the strided-offset walker that kernels use for non-contiguous operands.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"

namespace npu_kernels {

constexpr int kMaxDims = 16;

struct TensorDesc {
  void* data = nullptr;  // points at element 0 (storage offset already applied)
  DType dtype = DType::kFloat32;
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // in elements

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (sizes[d] != 1 && strides[d] != expected) return false;
      expected *= sizes[d];
    }
    return true;
  }
};

// Walks the element offsets of a strided tensor in row-major (logical) order, starting at any linear
// index; next() is O(1) amortised, so a block covering [begin, end) costs one division per dim.
class StridedWalker {
 public:
  StridedWalker(const TensorDesc& t, int64_t linear) : t_(t) {
    for (int d = t.ndim - 1; d >= 0; --d) {
      const int64_t sz = t.sizes[d] > 0 ? t.sizes[d] : 1;
      idx_[d] = linear % sz;
      linear /= sz;
      offset_ += idx_[d] * t.strides[d];
    }
  }
  int64_t offset() const { return offset_; }
  // Runs along the innermost dim: its stride, the elements left in the current run (a 0-d tensor has
  // one), and skip(k) for k <= left(), which carries into the outer dims when the run is used up.
  int64_t inner_stride() const { return t_.ndim > 0 ? t_.strides[t_.ndim - 1] : 0; }
  int64_t left() const { return t_.ndim > 0 ? t_.sizes[t_.ndim - 1] - idx_[t_.ndim - 1] : 1; }
  void skip(int64_t k) {
    const int last = t_.ndim - 1;
    if (last < 0 || k <= 0) return;
    idx_[last] += k - 1;
    offset_ += (k - 1) * t_.strides[last];
    next();
  }
  // Whole runs along the second-innermost dim from here (at the start of a run): how many are left in it, and
  // skip_rows(r) for r <= rows_left(), which leaves the walker at the start of the run after them.
  int64_t rows_left() const { return t_.ndim > 1 ? t_.sizes[t_.ndim - 2] - idx_[t_.ndim - 2] : 1; }
  void skip_rows(int64_t r) {
    if (t_.ndim < 2 || r <= 0) return skip(r);
    const int d = t_.ndim - 2;
    idx_[d] += r - 1;
    offset_ += (r - 1) * t_.strides[d];
    carry(d);
  }
  void next() { carry(t_.ndim - 1); }

 private:
  // One step of dim `from` (and of the outer dims it carries into).
  void carry(int from) {
    for (int d = from; d >= 0; --d) {
      if (++idx_[d] < t_.sizes[d]) {
        offset_ += t_.strides[d];
        return;
      }
      offset_ -= (idx_[d] - 1) * t_.strides[d];
      idx_[d] = 0;
    }
  }

  const TensorDesc& t_;
  int64_t idx_[kMaxDims] = {};
  int64_t offset_ = 0;
};

}  // namespace npu_kernels
