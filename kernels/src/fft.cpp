// FFT kernels: a transform as a sequence of one-axis passes, each one launch whose blocks split the lines of
// the axis and run pocketfft on their share (see npu_kernels/fft.h); contiguous lines at a cache-aliasing pitch
// go through padded staging rows, long lines take the four-step path of fft_long.cpp.
#include "npu_kernels/fft.h"

#include <pocketfft_hdronly.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <memory>

#include "fft_lanes.h"
#include "fft_long.h"
#include "npu_kernels/launch.h"

namespace npu_kernels::fft {
namespace {

using npu_sim::Status;

// All lines along `axis` of an operand view: `shape` is the complex shape for C2C, the real input's for R2C and
// the real output's for C2R (pocketfft's convention); the axis' other side is n/2 + 1 long for R2C / C2R.
struct Pass {
  Kind kind = Kind::kC2C;
  std::vector<int64_t> shape, in_strides, out_strides;  // strides in elements of each side's type
  const void* in = nullptr;
  void* out = nullptr;
  int64_t axis = 0;
  bool forward = true;
  double scale = 1.0;
};

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t v : shape) n *= v;
  return n;
}

// The elements a pass over `lines` lines of n points reads and writes (the half-length side of R2C / C2R counted
// as such).
std::pair<int64_t, int64_t> pass_elements(Kind kind, int64_t n, int64_t lines) {
  const int64_t half = n / 2 + 1;
  switch (kind) {
    case Kind::kR2C: return {lines * n, lines * half};
    case Kind::kC2R: return {lines * half, lines * n};
    default: return {lines * n, lines * n};
  }
}

template <class R>
void run_pocketfft(const Pass& p, const std::vector<int64_t>& shape, const char* in, char* out) {
  using C = std::complex<R>;
  const int64_t in_size = detail::in_size<R>(p.kind), out_size = detail::out_size<R>(p.kind);
  pocketfft::shape_t sh(shape.begin(), shape.end());
  pocketfft::stride_t si(shape.size()), so(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    si[d] = static_cast<std::ptrdiff_t>(p.in_strides[d] * in_size);
    so[d] = static_cast<std::ptrdiff_t>(p.out_strides[d] * out_size);
  }
  const auto axis = static_cast<std::size_t>(p.axis);
  const R fct = static_cast<R>(p.scale);
  switch (p.kind) {
    case Kind::kC2C:
      pocketfft::c2c<R>(sh, si, so, {axis}, p.forward, reinterpret_cast<const C*>(in), reinterpret_cast<C*>(out), fct);
      break;
    case Kind::kR2C:
      pocketfft::r2c<R>(sh, si, so, axis, p.forward, reinterpret_cast<const R*>(in), reinterpret_cast<C*>(out), fct);
      break;
    case Kind::kC2R:
      pocketfft::c2r<R>(sh, si, so, axis, p.forward, reinterpret_cast<const C*>(in), reinterpret_cast<R*>(out), fct);
      break;
  }
}

// Bytes of one element on each side of a pass.
std::pair<std::size_t, std::size_t> element_sizes(DType dt, Kind kind) {
  const bool dbl = dt == DType::kComplex128;
  return {static_cast<std::size_t>(dbl ? detail::in_size<double>(kind) : detail::in_size<float>(kind)),
          static_cast<std::size_t>(dbl ? detail::out_size<double>(kind) : detail::out_size<float>(kind))};
}

// 5 n log2 n real flops per complex line of n points (2.5 for the real-input / real-output transforms)
double flops_per_line(Kind kind, int64_t n) {
  return (kind == Kind::kC2C ? 5.0 : 2.5) * static_cast<double>(n) *
         std::log2(static_cast<double>(std::max<int64_t>(n, 2)));
}

const char* pass_name(Kind k) {
  switch (k) {
    case Kind::kR2C: return "fft_r2c";
    case Kind::kC2R: return "fft_c2r";
    default: return "fft_c2c";
  }
}

// One launch: the lines of the pass split along its largest other dim (every block a sub-array of whole lines).
Status launch_pass(npu_sim::Stream s, DType dt, const Pass& p) {
  const std::size_t rank = p.shape.size();
  int64_t split = -1;
  for (std::size_t d = 0; d < rank; ++d) {
    if (static_cast<int64_t>(d) != p.axis && (split < 0 || p.shape[d] > p.shape[static_cast<std::size_t>(split)])) {
      split = static_cast<int64_t>(d);
    }
  }
  const int64_t n = p.shape[static_cast<std::size_t>(p.axis)];
  const int64_t rows = split < 0 ? 1 : p.shape[static_cast<std::size_t>(split)];
  const int64_t per_row = numel(p.shape) / std::max<int64_t>(rows, 1);  // elements of one index of the split dim
  // At least 32K elements per block, and 32 lines where that still leaves a block per core thread: pocketfft
  // runs whole groups of 16 lines in SIMD lanes, and a block of 8 lines ran them one by one (64 x 16384 points:
  // 46 us a line in blocks of 32, 61-96 in blocks of 8 or fewer).
  const int64_t lines_per_row = std::max<int64_t>(1, per_row / std::max<int64_t>(n, 1));
  const int64_t by_group = std::min<int64_t>((32 + lines_per_row - 1) / lines_per_row,
                                             rows / std::max<int64_t>(1, core_threads()));
  const int64_t grain = std::max<int64_t>({1, 32768 / std::max<int64_t>(per_row, 1), by_group});
  const bool dbl = dt == DType::kComplex128;
  const auto [in_size, out_size] = element_sizes(dt, p.kind);
  const double line_flops = flops_per_line(p.kind, n);
  return parallel_for(s, pass_name(p.kind), rows, grain,
                      [p, split, per_row, n, dbl, in_size, out_size, line_flops](int64_t begin, int64_t end,
                                                                                  const npu_sim::BlockContext& ctx) {
                        std::vector<int64_t> shape = p.shape;
                        const char* in = static_cast<const char*>(p.in);
                        char* out = static_cast<char*>(p.out);
                        if (split >= 0) {
                          const auto d = static_cast<std::size_t>(split);
                          shape[d] = end - begin;
                          in += begin * p.in_strides[d] * static_cast<int64_t>(in_size);
                          out += begin * p.out_strides[d] * static_cast<int64_t>(out_size);
                        }
                        if (dbl) {
                          run_pocketfft<double>(p, shape, in, out);
                        } else {
                          run_pocketfft<float>(p, shape, in, out);
                        }
                        const int64_t lines = (end - begin) * per_row / std::max<int64_t>(n, 1);
                        const auto [read, written] = pass_elements(p.kind, n, lines);
                        npu_sim::record_traffic(ctx, static_cast<uint64_t>(read) * in_size,
                                                static_cast<uint64_t>(written) * out_size, 0,
                                                static_cast<uint64_t>(line_flops * static_cast<double>(lines)));
                      });
}

// The pass as the four-step path takes it: every line's first element on each side.
detail::LongLines long_lines(const Pass& p) {
  detail::LongLines l;
  l.kind = p.kind, l.forward = p.forward, l.scale = p.scale, l.in = p.in, l.out = p.out;
  const auto axis = static_cast<std::size_t>(p.axis);
  l.n = p.shape[axis], l.in_stride = p.in_strides[axis], l.out_stride = p.out_strides[axis];
  l.in_offsets.push_back(0);
  l.out_offsets.push_back(0);
  for (std::size_t d = 0; d < p.shape.size(); ++d) {  // every index of the other dims, one dim at a time
    if (d == axis) continue;
    const std::size_t lines = l.in_offsets.size();
    for (int64_t i = 1; i < p.shape[d]; ++i) {
      for (std::size_t j = 0; j < lines; ++j) {
        l.in_offsets.push_back(l.in_offsets[j] + i * p.in_strides[d]);
        l.out_offsets.push_back(l.out_offsets[j] + i * p.out_strides[d]);
      }
    }
  }
  return l;
}

// Contiguous lines spaced by a multiple of 2 KiB: pocketfft gathers 16 (double: 8) lines element by element
// across the lines, and such lines fall in one or two L1 sets, so every gather misses (1024-point rows of a
// 1024^2 array took 2.2x its columns). These passes go through staging rows of pitch n + 8 points instead,
// kStageLines lines at a time: copied in row by row, transformed there, copied out.
constexpr int64_t kStageLines = 32;

bool staged_applies(const Pass& p, DType dt) {
  const auto axis = static_cast<std::size_t>(p.axis);
  const int64_t n = p.shape[axis];
  if (n < 64 || numel(p.shape) / n < 16) return false;
  std::size_t next = 0;  // the first other dim with more than one index: long_lines' order of lines
  while (next < p.shape.size() && (next == axis || p.shape[next] < 2)) ++next;
  const auto [in_size, out_size] = element_sizes(dt, p.kind);
  // Staging pays where a line is short: 32 rows of 64 KiB (16384 real points) filled 2 MiB of L2 twice per group
  // and ran 64 x 16384 at 1.7x CPU eager; pocketfft's own 16-line gather of such lines reads whole runs.
  if (n * static_cast<int64_t>(in_size) > 16384) return false;
  const auto aliased = [&](const std::vector<int64_t>& strides, std::size_t size) {
    return strides[axis] == 1 && (strides[next] * static_cast<int64_t>(size)) % 2048 == 0;
  };
  return aliased(p.in_strides, in_size) || aliased(p.out_strides, out_size);
}

// g lines of n elements of `Size` bytes between an operand (line k at offsets[k], `stride` apart, in elements)
// and staging rows `pitch` apart; to_stage: operand -> staging. Contiguous lines go row by row; strided ones
// element-major, so that lines which are neighbouring columns read (write) one run of g elements per step.
template <std::size_t Size>
void copy_lines(const void* operand, const int64_t* offsets, int64_t stride, char* stage, int64_t pitch, int64_t g,
                int64_t n, bool to_stage) {
  constexpr auto sz = static_cast<int64_t>(Size);
  char* base = static_cast<char*>(const_cast<void*>(operand));
  if (stride == 1) {
    for (int64_t k = 0; k < g; ++k) {
      char* line = base + offsets[k] * sz;
      char* row = stage + k * pitch * sz;
      std::memcpy(to_stage ? row : line, to_stage ? line : row, static_cast<std::size_t>(n) * Size);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < g; ++k) {
      char* elem = base + (offsets[k] + i * stride) * sz;
      char* cell = stage + (k * pitch + i) * sz;
      std::memcpy(to_stage ? cell : elem, to_stage ? elem : cell, Size);
    }
  }
}

template <class R, Kind K>
void run_staged(const detail::LongLines& l, int64_t begin, int64_t end) {
  using C = std::complex<R>;
  constexpr auto in_size = static_cast<std::size_t>(detail::in_size<R>(K));
  constexpr auto out_size = static_cast<std::size_t>(detail::out_size<R>(K));
  const int64_t half = l.n / 2 + 1;
  const int64_t n_in = l.kind == Kind::kC2R ? half : l.n, n_out = l.kind == Kind::kR2C ? half : l.n;
  const int64_t pitch_in = n_in + 8, pitch_out = n_out + 8;
  thread_local std::vector<C> stage;  // the core thread's UB stand-in, reused across launches
  const auto points = [](int64_t pitch, std::size_t size) {  // kStageLines rows of `pitch` elements, in C's
    return static_cast<std::size_t>(kStageLines * pitch) * size / sizeof(C) + 1;
  };
  const std::size_t in_points = points(pitch_in, in_size);
  stage.resize(in_points + points(pitch_out, out_size));
  char* const sin = reinterpret_cast<char*>(stage.data());
  char* const sout = reinterpret_cast<char*>(stage.data() + in_points);
  const R fct = static_cast<R>(l.scale);
  for (int64_t g0 = begin; g0 < end; g0 += kStageLines) {
    const int64_t g = std::min(kStageLines, end - g0);
    copy_lines<in_size>(l.in, l.in_offsets.data() + g0, l.in_stride, sin, pitch_in, g, n_in, true);
    const pocketfft::shape_t sh{static_cast<std::size_t>(g), static_cast<std::size_t>(l.n)};
    const pocketfft::stride_t si{static_cast<std::ptrdiff_t>(pitch_in * static_cast<int64_t>(in_size)),
                                 static_cast<std::ptrdiff_t>(in_size)};
    const pocketfft::stride_t so{static_cast<std::ptrdiff_t>(pitch_out * static_cast<int64_t>(out_size)),
                                 static_cast<std::ptrdiff_t>(out_size)};
    if constexpr (K == Kind::kC2C) {
      pocketfft::c2c<R>(sh, si, so, {1}, l.forward, reinterpret_cast<const C*>(sin), reinterpret_cast<C*>(sout), fct);
    } else if constexpr (K == Kind::kR2C) {
      pocketfft::r2c<R>(sh, si, so, 1, l.forward, reinterpret_cast<const R*>(sin), reinterpret_cast<C*>(sout), fct);
    } else {
      pocketfft::c2r<R>(sh, si, so, 1, l.forward, reinterpret_cast<const C*>(sin), reinterpret_cast<R*>(sout), fct);
    }
    copy_lines<out_size>(l.out, l.out_offsets.data() + g0, l.out_stride, sout, pitch_out, g, n_out, false);
  }
  if (stage.size() * sizeof(C) > detail::kKeptThreadBufferBytes) std::vector<C>().swap(stage);
}

// One launch over the lines of a pass in blocks of whole lines (at least kStageLines, and 32K points), each run in
// the SIMD lanes of fft_lanes.cpp (`lanes`) or through the staging rows.
Status launch_lines(npu_sim::Stream s, DType dt, detail::LongLines lines, bool lanes) {
  auto l = std::make_shared<const detail::LongLines>(std::move(lines));
  const bool dbl = dt == DType::kComplex128;
  const auto [in_size, out_size] = element_sizes(dt, l->kind);
  const double line_flops = flops_per_line(l->kind, l->n);
  const auto count = static_cast<int64_t>(l->in_offsets.size());
  // lanes: up to four groups of 16 lines per block while every core thread still gets a block
  const int64_t per_thread = (count + core_threads() - 1) / std::max<int64_t>(1, core_threads());
  const int64_t per_block =
      lanes ? std::clamp<int64_t>((per_thread + 15) / 16 * 16, 16, detail::kLanesPerBlock) : kStageLines;
  const int64_t grain = std::max<int64_t>(per_block, 32768 / std::max<int64_t>(l->n, 1));
  return parallel_for(s, pass_name(l->kind), count, grain,
                      [l, dbl, lanes, in_size = in_size, out_size = out_size, line_flops](
                          int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                        const auto run = [&](auto real) {
                          using R = decltype(real);
                          if (lanes) return detail::run_lanes(*l, b, e);
                          switch (l->kind) {
                            case Kind::kR2C: return run_staged<R, Kind::kR2C>(*l, b, e);
                            case Kind::kC2R: return run_staged<R, Kind::kC2R>(*l, b, e);
                            default: return run_staged<R, Kind::kC2C>(*l, b, e);
                          }
                        };
                        if (dbl) {
                          run(double{});
                        } else {
                          run(float{});
                        }
                        const auto [read, written] = pass_elements(l->kind, l->n, e - b);
                        npu_sim::record_traffic(ctx, static_cast<uint64_t>(read) * in_size,
                                                static_cast<uint64_t>(written) * out_size, 0,
                                                static_cast<uint64_t>(line_flops * static_cast<double>(e - b)));
                      });
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * std::max<int64_t>(shape[d], 1);
  return st;
}

bool valid(const Transform& t, const void* scratch) {
  const std::size_t rank = t.in_shape.size();
  if (t.dtype != DType::kComplex64 && t.dtype != DType::kComplex128) return false;
  if (t.axes.empty() || rank == 0 || t.in_strides.size() != rank || t.out_shape.size() != rank ||
      t.out_strides.size() != rank) {
    return false;
  }
  std::vector<bool> seen(rank, false);
  for (int64_t a : t.axes) {
    if (a < 0 || a >= static_cast<int64_t>(rank) || seen[static_cast<std::size_t>(a)]) return false;
    seen[static_cast<std::size_t>(a)] = true;
  }
  const auto last = static_cast<std::size_t>(t.axes.back());
  for (std::size_t d = 0; d < rank; ++d) {
    if (t.in_shape[d] < 0 || t.out_shape[d] < 0) return false;
    int64_t want = t.in_shape[d];
    if (d == last && t.kind == Kind::kR2C) want = t.in_shape[d] / 2 + 1;
    if (d == last && t.kind == Kind::kC2R) want = -1;
    if (want >= 0 && t.out_shape[d] != want) return false;
  }
  if (t.kind == Kind::kC2R) {
    if (t.in_shape[last] != t.out_shape[last] / 2 + 1) return false;
    if (t.axes.size() > 1 && scratch == nullptr) return false;
  }
  return true;
}

}  // namespace

Status execute(npu_sim::Stream s, const Transform& t, const void* in, void* out, void* scratch) {
  if (!valid(t, scratch)) return Status::kInvalidValue;
  if (numel(t.in_shape) == 0 || numel(t.out_shape) == 0) return Status::kSuccess;
  std::vector<Pass> passes;
  auto add = [&](Kind kind, const std::vector<int64_t>& shape, const std::vector<int64_t>& si, const void* src,
                 const std::vector<int64_t>& so, void* dst, int64_t axis, bool forward) {
    Pass p;
    p.kind = kind, p.shape = shape, p.in_strides = si, p.out_strides = so, p.in = src, p.out = dst, p.axis = axis;
    p.forward = forward;
    p.scale = passes.empty() ? t.scale : 1.0;  // the normalization once, on the first pass
    passes.push_back(std::move(p));
  };
  const std::vector<int64_t> others(t.axes.begin(), t.axes.end() - 1);
  const int64_t last = t.axes.back();
  switch (t.kind) {
    case Kind::kC2C:
      for (int64_t a : t.axes) {
        if (passes.empty()) {
          add(Kind::kC2C, t.in_shape, t.in_strides, in, t.out_strides, out, a, t.forward);
        } else {
          add(Kind::kC2C, t.out_shape, t.out_strides, out, t.out_strides, out, a, t.forward);
        }
      }
      break;
    case Kind::kR2C:
      add(Kind::kR2C, t.in_shape, t.in_strides, in, t.out_strides, out, last, t.forward);
      for (int64_t a : others) add(Kind::kC2C, t.out_shape, t.out_strides, out, t.out_strides, out, a, t.forward);
      break;
    case Kind::kC2R: {
      const void* src = in;
      std::vector<int64_t> src_strides = t.in_strides;
      if (!others.empty()) {  // the complex passes run in the scratch copy: the first one writes it
        const auto st = contiguous_strides(t.in_shape);
        for (int64_t a : others) {
          add(Kind::kC2C, t.in_shape, passes.empty() ? t.in_strides : st, passes.empty() ? in : scratch, st, scratch,
              a, false);
        }
        src = scratch, src_strides = st;
      }
      add(Kind::kC2R, t.out_shape, src_strides, src, t.out_strides, out, last, false);
      break;
    }
  }
  for (const Pass& p : passes) {
    const auto axis = static_cast<std::size_t>(p.axis);
    Status st;
    if (detail::four_step_applies(t.dtype, p.kind, p.forward, p.shape[axis], p.in_strides[axis])) {
      st = detail::launch_four_step(s, t.dtype, long_lines(p));
    } else if (detail::lanes_apply(t.dtype, p.kind, p.shape[axis])) {
      st = launch_lines(s, t.dtype, long_lines(p), /*lanes=*/true);
    } else if (staged_applies(p, t.dtype)) {
      st = launch_lines(s, t.dtype, long_lines(p), /*lanes=*/false);
    } else {
      st = launch_pass(s, t.dtype, p);
    }
    if (st != Status::kSuccess) return st;
  }
  return Status::kSuccess;
}

}  // namespace npu_kernels::fft
