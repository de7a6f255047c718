// Convolution on oneDNN for float32, bfloat16 and float16 (fp32 accumulation), 2-D and 3-D (`ConvNd`): forward,
// backward-input and backward-weight, each AI-core thread running oneDNN on its own slice with one OpenMP
// thread. conv2d tries it before its tiled path; conv3d (the public conv3d_* passes here) has only it.
//
// oneDNN's fast convolutions want its blocked layouts (nChw16c, OIhw16i16o), so each slice is reordered
// from the caller's strided NCHW (any strides) into per-thread scratch, convolved, and the result reordered
// back. Measured on a 2-core Zen 4 (N=8, C=O=64, 56x56, 3x3): blocked forward 8.0 ms fp32 / 3.9 ms bf16
// against 11.5 / 8.8 ms for oneDNN on plain NCHW and 12.6 / 12.9 ms for our implicit-im2col GEMM.
// Slices: forward and backward-input by images when there are at least as many as core threads, else by output /
// input channels (grouped: by whole groups). The weight gradient, ungrouped, by images when there are enough
// (each slice writes its fp32 partial gradient, a second launch adds them in slice order and rounds once: on the
// AMX Xeon oneDNN's bf16 weight gradient of a 16-output-channel slice cost as much as the whole 32), else by
// output channels; grouped, by whole groups.
// NPU_SIM_CONV_DNNL=0 (or NPU_SIM_GEMM_DNNL=0, or no oneDNN) keeps conv2d on the tiled path and sends
// conv3d back to its caller (kNotSupported); so does a type or shape oneDNN has only its reference kernel for
// (bf16 and fp16 on an AVX2-only CPU: conv2d takes its tiled path, conv3d's adapter convolves in fp32 and
// rounds once).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "dnnl_conv.h"
#include "gemm_tiling.h"
#include "npu_kernels/gemm.h"
#include "npu_kernels/launch.h"

#ifdef NPU_SIM_HAVE_DNNL
#include "dnnl_context.h"
#endif

namespace npu_kernels {
namespace detail {

#ifdef NPU_SIM_HAVE_DNNL
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// One slice: [lo, hi) of the images, of the output / input channels, or of whole groups.
enum class SplitBy { kImages, kOutChannels, kInChannels, kGroups };

struct Slice {
  int64_t n0 = 0, n = 0, c0 = 0, c = 0, o0 = 0, o = 0, groups = 1;
};

struct Plan {
  SplitBy by = SplitBy::kImages;
  int64_t units = 1;
  Slice slice(const ConvNd& a, int64_t u) const {
    Slice s{0, a.batch, 0, a.in_channels, 0, a.out_channels, a.groups};
    const int64_t len = by == SplitBy::kImages        ? a.batch
                        : by == SplitBy::kOutChannels ? a.out_channels
                        : by == SplitBy::kInChannels  ? a.in_channels
                                                      : a.groups;
    const int64_t lo = len * u / units, hi = len * (u + 1) / units;
    if (by == SplitBy::kImages) s.n0 = lo, s.n = hi - lo;
    if (by == SplitBy::kOutChannels) s.o0 = lo, s.o = hi - lo;
    if (by == SplitBy::kInChannels) s.c0 = lo, s.c = hi - lo;
    if (by == SplitBy::kGroups) {
      const int64_t cg = a.in_channels / a.groups, og = a.out_channels / a.groups;
      s.groups = hi - lo, s.c0 = lo * cg, s.c = s.groups * cg, s.o0 = lo * og, s.o = s.groups * og;
    }
    return s;
  }
};

memory::data_type dnnl_type(DType t) {
  return t == DType::kBFloat16 ? memory::data_type::bf16
         : t == DType::kFloat16 ? memory::data_type::f16
                                : memory::data_type::f32;
}
std::size_t elem_size(DType t) { return t == DType::kFloat32 ? 4 : 2; }

// The caller's tensors of one slice as strided plain memory descriptors, and their addresses.
struct SliceMem {
  memory::desc x, w, y, bias;
  void *xp, *wp, *yp;
  const void* bp;
};

// dims / strides of an (N or O, C, spatial...) tensor: the two leading ones, then the rank spatial ones.
memory::dims nd(const ConvNd& a, int64_t d0, int64_t d1, const int64_t* spatial) {
  memory::dims v{d0, d1};
  for (int i = 0; i < a.rank; ++i) v.push_back(spatial[i]);
  return v;
}
memory::dims strides_of(const ConvNd& a, const int64_t* st) { return memory::dims(st, st + 2 + a.rank); }

SliceMem slice_mem(const ConvNd& a, const Slice& s) {
  const auto dt = dnnl_type(a.dtype);
  const std::size_t es = elem_size(a.dtype);
  auto at = [es](void* p, int64_t off) { return static_cast<void*>(static_cast<char*>(p) + off * es); };
  const int64_t* xs = a.x_strides;
  const int64_t* ws = a.w_strides;
  const int64_t* ys = a.y_strides;
  SliceMem m;
  m.x = memory::desc(nd(a, s.n, s.c, a.in), dt, strides_of(a, xs));
  m.y = memory::desc(nd(a, s.n, s.o, a.out), dt, strides_of(a, ys));
  if (a.groups == 1) {
    m.w = memory::desc(nd(a, s.o, s.c, a.kernel), dt, strides_of(a, ws));
  } else {  // (G, O/G, C/G, spatial...) over the slice's groups (images or whole groups are split)
    const int64_t og = a.out_channels / a.groups;
    memory::dims dims{s.groups}, st{og * ws[0]};
    const memory::dims inner = nd(a, og, a.in_channels / a.groups, a.kernel), inner_st = strides_of(a, ws);
    dims.insert(dims.end(), inner.begin(), inner.end());
    st.insert(st.end(), inner_st.begin(), inner_st.end());
    m.w = memory::desc(dims, dt, st);
  }
  m.xp = at(a.x, s.n0 * xs[0] + s.c0 * xs[1]);
  m.yp = at(a.y, s.n0 * ys[0] + s.o0 * ys[1]);
  // a grouped weight's second dim is C / groups, never sliced: a group slice starts at its first output row
  m.wp = at(a.w, s.o0 * ws[0] + (a.groups == 1 ? s.c0 * ws[1] : 0));
  m.bp = nullptr;
  if (a.bias != nullptr) {
    const int64_t len = s.o, first = s.o0;  // forward bias: per output channel
    m.bias = memory::desc({len}, dt, Tag::a);  // oneDNN reads a dense bias: run_slice copies it so
    m.bp = static_cast<const char*>(a.bias) + first * a.bias_stride * es;
  }
  return m;
}

// An ungrouped weight gradient's elements (O x C x kernel).
int64_t weight_elems(const ConvNd& a) {
  int64_t e = a.out_channels * a.in_channels;
  for (int i = 0; i < a.rank; ++i) e *= a.kernel[i];
  return e;
}

// The slice's weight gradient redirected into a dense fp32 (O, C, kernel...) partial at p.
SliceMem with_partial_weight(const ConvNd& a, SliceMem m, float* p) {
  m.w = memory::desc(nd(a, a.out_channels, a.in_channels, a.kernel), memory::data_type::f32,
                     a.rank == 3 ? Tag::abcde : Tag::abcd);
  m.wp = p;
  return m;
}

memory::desc any_layout(const memory::desc& d) { return memory::desc(d.get_dims(), d.get_data_type(), Tag::any); }

struct Geometry {
  memory::dims strides, dilates, pad_l, pad_r;
};

Geometry geometry(const ConvNd& a) {
  Geometry g;
  for (int i = 0; i < a.rank; ++i) {
    g.strides.push_back(a.stride[i]);
    g.dilates.push_back(a.dilation[i] - 1);
    g.pad_l.push_back(a.pad[i]);
    g.pad_r.push_back((a.out[i] - 1) * a.stride[i] + (a.kernel[i] - 1) * a.dilation[i] + 1 - a.in[i] - a.pad[i]);
  }
  return g;
}

const dnnl::engine& engine() { return dnnl_engine(); }

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// Forward pd for a slice: also the hint the backward pds need.
dnnl::convolution_forward::primitive_desc forward_pd(const ConvNd& a, const SliceMem& m, bool with_bias) {
  const Geometry g = geometry(a);
  const auto prop = dnnl::prop_kind::forward_training;
  const auto algo = dnnl::algorithm::convolution_direct;
  if (with_bias) {
    return dnnl::convolution_forward::primitive_desc(engine(), prop, algo, any_layout(m.x), any_layout(m.w), m.bias,
                                                     any_layout(m.y), g.strides, g.dilates, g.pad_l, g.pad_r,
                                                     user_scratchpad());
  }
  return dnnl::convolution_forward::primitive_desc(engine(), prop, algo, any_layout(m.x), any_layout(m.w),
                                                   any_layout(m.y), g.strides, g.dilates, g.pad_l, g.pad_r,
                                                   user_scratchpad());
}

dnnl::convolution_backward_data::primitive_desc backward_data_pd(const ConvNd& a, const SliceMem& m) {
  const Geometry g = geometry(a);
  return dnnl::convolution_backward_data::primitive_desc(engine(), dnnl::algorithm::convolution_direct,
                                                         any_layout(m.x), any_layout(m.w), any_layout(m.y), g.strides,
                                                         g.dilates, g.pad_l, g.pad_r, forward_pd(a, m, false),
                                                         user_scratchpad());
}

dnnl::convolution_backward_weights::primitive_desc backward_weights_pd(const ConvNd& a, const SliceMem& m) {
  const Geometry g = geometry(a);
  // the forward hint in the operands' own type (an fp32 partial gradient of bf16 operands has no fp32 forward)
  SliceMem hint = m;
  hint.w = memory::desc(m.w.get_dims(), m.x.get_data_type(), Tag::any);
  return dnnl::convolution_backward_weights::primitive_desc(engine(), dnnl::algorithm::convolution_direct,
                                                            any_layout(m.x), any_layout(m.w), any_layout(m.y),
                                                            g.strides, g.dilates, g.pad_l, g.pad_r,
                                                            forward_pd(a, hint, false), user_scratchpad());
}

bool jit(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).find("ref") == std::string::npos;
}

// The caller's operand in the layout `want`: itself when the layouts agree, else a reorder into buffer i.
memory staged_in(DnnlCoreThread& t, int i, const memory::desc& user, void* p, const memory::desc& want) {
  memory u(user, engine(), p);
  if (user == want) return u;
  memory w(want, engine(), t.take(i, want.get_size()));
  dnnl::reorder(u, w).execute(t.stream, u, w);
  return w;
}

// Where a result is written: the caller's memory when the layouts agree, else buffer i (copied back by
// staged_out).
memory result_mem(DnnlCoreThread& t, int i, const memory::desc& user, void* p, const memory::desc& have) {
  if (user == have) return memory(user, engine(), p);
  return memory(have, engine(), t.take(i, have.get_size()));
}

void staged_out(DnnlCoreThread& t, memory result, const memory::desc& user, void* p) {
  memory u(user, engine(), p);
  if (result.get_data_handle() == p) return;
  dnnl::reorder(result, u).execute(t.stream, result, u);
}

memory scratchpad(DnnlCoreThread& t, const memory::desc& d) { return memory(d, engine(), t.take(3, d.get_size())); }

// A pass's primitive and the layouts it wants, by role: forward (a, b, out) = (src, weights, dst); backward data
// (diff_dst, weights, diff_src); backward weights (src, diff_dst, diff_weights).
struct Prepared {
  dnnl::primitive prim;
  memory::desc a, b, out, scratch;
  bool jit;  // a JIT implementation, not oneDNN's reference loop
};

// The core thread's prepared passes by everything they depend on (the pass, the slice's user layouts, the
// geometry). Building the primitive descriptors is oneDNN's implementation dispatch, and a backward pass builds
// a forward one too as its hint: tens of microseconds per slice per call before. Owned by one core thread.
const Prepared& prepared(ConvPass pass, const ConvNd& a, const SliceMem& m) {
  struct Entry {
    ConvPass pass;
    bool bias;
    memory::desc x, w, y, b;
    memory::dims strides, dilates, pad_l, pad_r;
    Prepared p;
  };
  thread_local std::vector<Entry> cache;
  constexpr std::size_t kMaxEntries = 64;
  const Geometry g = geometry(a);
  const bool bias = pass == ConvPass::kForward && m.bp != nullptr;
  for (const Entry& e : cache) {
    if (e.pass == pass && e.bias == bias && e.x == m.x && e.w == m.w && e.y == m.y && (!bias || e.b == m.bias) &&
        e.strides == g.strides && e.dilates == g.dilates && e.pad_l == g.pad_l && e.pad_r == g.pad_r) {
      return e.p;
    }
  }
  if (cache.size() >= kMaxEntries) cache.clear();
  Prepared p;
  if (pass == ConvPass::kForward) {
    const auto pd = forward_pd(a, m, bias);
    p = {dnnl::convolution_forward(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc(), pd.scratchpad_desc(),
         jit(pd)};
  } else if (pass == ConvPass::kBackwardInput) {
    const auto pd = backward_data_pd(a, m);
    p = {dnnl::convolution_backward_data(pd), pd.diff_dst_desc(), pd.weights_desc(), pd.diff_src_desc(),
         pd.scratchpad_desc(), jit(pd)};
  } else {
    const auto pd = backward_weights_pd(a, m);
    p = {dnnl::convolution_backward_weights(pd), pd.src_desc(), pd.diff_dst_desc(), pd.diff_weights_desc(),
         pd.scratchpad_desc(), jit(pd)};
  }
  cache.push_back({pass, bias, m.x, m.w, m.y, bias ? m.bias : memory::desc(), g.strides, g.dilates, g.pad_l,
                   g.pad_r, std::move(p)});
  return cache.back().p;
}

// One slice's pass over its operands m (slice_mem's, or its weight gradient redirected to a partial).
void run_slice(ConvPass pass, const ConvNd& a, const Slice& s, const SliceMem& m) {
  DnnlCoreThread& t = DnnlCoreThread::mine();
  const Prepared& pd = prepared(pass, a, m);
  if (pass == ConvPass::kForward) {
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, staged_in(t, 0, m.x, m.xp, pd.a)},
                                         {DNNL_ARG_WEIGHTS, staged_in(t, 1, m.w, m.wp, pd.b)},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad(t, pd.scratch)}};
    if (m.bp != nullptr) {  // the bias slice, dense (oneDNN's kernels ignore a 1-D stride: 0 and 2 read wrong)
      const std::size_t es = elem_size(a.dtype);
      auto* dense = static_cast<unsigned char*>(t.take(4, static_cast<std::size_t>(s.o) * es));
      for (int64_t i = 0; i < s.o; ++i)
        std::memcpy(dense + i * es, static_cast<const unsigned char*>(m.bp) + i * a.bias_stride * es, es);
      args.emplace(DNNL_ARG_BIAS, memory(m.bias, engine(), dense));
    }
    memory dst = result_mem(t, 2, m.y, m.yp, pd.out);
    args.emplace(DNNL_ARG_DST, dst);
    pd.prim.execute(t.stream, args);
    staged_out(t, dst, m.y, m.yp);
  } else if (pass == ConvPass::kBackwardInput) {
    memory dx = result_mem(t, 2, m.x, m.xp, pd.out);
    pd.prim.execute(t.stream, {{DNNL_ARG_DIFF_DST, staged_in(t, 0, m.y, m.yp, pd.a)},
                               {DNNL_ARG_WEIGHTS, staged_in(t, 1, m.w, m.wp, pd.b)},
                               {DNNL_ARG_DIFF_SRC, dx},
                               {DNNL_ARG_SCRATCHPAD, scratchpad(t, pd.scratch)}});
    staged_out(t, dx, m.x, m.xp);
  } else {
    memory dw = result_mem(t, 2, m.w, m.wp, pd.out);
    pd.prim.execute(t.stream, {{DNNL_ARG_SRC, staged_in(t, 0, m.x, m.xp, pd.a)},
                               {DNNL_ARG_DIFF_DST, staged_in(t, 1, m.y, m.yp, pd.b)},
                               {DNNL_ARG_DIFF_WEIGHTS, dw},
                               {DNNL_ARG_SCRATCHPAD, scratchpad(t, pd.scratch)}});
    staged_out(t, dw, m.w, m.wp);
  }
  t.stream.wait();
}

// Adds the transposed convolution's bias (per input channel of the forward sense) to a float32
// backward-input slice.
void add_channel_bias(const ConvNd& a, const Slice& s) {
  float* x = static_cast<float*>(a.x);
  const float* b = static_cast<const float*>(a.bias);
  const int64_t d = a.rank == 3 ? a.in[0] : 1, h = a.in[a.rank - 2], w = a.in[a.rank - 1];
  const int64_t sd = a.rank == 3 ? a.x_strides[2] : 0, sh = a.x_strides[a.rank], sw = a.x_strides[a.rank + 1];
  for (int64_t n = s.n0; n < s.n0 + s.n; ++n)
    for (int64_t c = s.c0; c < s.c0 + s.c; ++c) {
      const float bv = b[c * a.bias_stride];
      float* plane = x + n * a.x_strides[0] + c * a.x_strides[1];
      for (int64_t k = 0; k < d; ++k)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < w; ++j) plane[k * sd + i * sh + j * sw] += bv;
    }
}

int64_t product(const int64_t* v, int rank) {
  int64_t p = 1;
  for (int i = 0; i < rank; ++i) p *= v[i];
  return p;
}

bool enabled() {
  static const bool on = [] {
    const char* off = std::getenv("NPU_SIM_CONV_DNNL");
    return dnnl_enabled() && !(off != nullptr && std::string(off) == "0");
  }();
  return on;
}

// Zeroes, in a backward-input slice, the input elements no output reaches: those of `full` beyond the
// cropped extents `in` (all-zero bits are 0 in every float type).
void zero_unreached(const ConvNd& full, const int64_t* in, const Slice& s) {
  const std::size_t es = elem_size(full.dtype);
  const int r = full.rank;
  const int64_t d = r == 3 ? full.in[0] : 1, h = full.in[r - 2], w = full.in[r - 1];
  const int64_t cd = r == 3 ? in[0] : 1, ch = in[r - 2], cw = in[r - 1];
  const int64_t sd = r == 3 ? full.x_strides[2] : 0, sh = full.x_strides[r], sw = full.x_strides[r + 1];
  for (int64_t n = s.n0; n < s.n0 + s.n; ++n)
    for (int64_t c = s.c0; c < s.c0 + s.c; ++c) {
      char* plane = static_cast<char*>(full.x) + (n * full.x_strides[0] + c * full.x_strides[1]) * es;
      for (int64_t k = 0; k < d; ++k)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < w; ++j)
            if (k >= cd || i >= ch || j >= cw) std::memset(plane + (k * sd + i * sh + j * sw) * es, 0, es);
    }
}

// The weight gradient from the image slices' fp32 partials: each element their sum in slice order, rounded once
// into the caller's type and strides. A launch of its own, over runs of elements.
npu_sim::Status add_partials(npu_sim::Stream stream, const ConvNd& a, std::shared_ptr<float[]> partial, int64_t units,
                             int64_t welems) {
  constexpr int64_t kRun = 4096;
  const char* name = a.rank == 3 ? "conv3d_backward_weight_sum" : "conv2d_backward_weight_sum";
  return parallel_for(stream, name, (welems + kRun - 1) / kRun, 1,
                      [a, partial, units, welems](int64_t begin, int64_t end, const npu_sim::BlockContext& ctx) {
                        const int rank = a.rank;
                        int64_t dims[5] = {a.out_channels, a.in_channels};
                        for (int i = 0; i < rank; ++i) dims[2 + i] = a.kernel[i];
                        bool dense = true;  // the caller's weight gradient is contiguous: offset = element
                        for (int64_t d = rank + 1, st = 1; d >= 0; st *= dims[d], --d) dense &= a.w_strides[d] == st;
                        const int64_t lo = begin * kRun, hi = std::min(welems, end * kRun);
                        for (int64_t e = lo; e < hi; ++e) {
                          float v = partial[e];
                          for (int64_t u = 1; u < units; ++u) v += partial[u * welems + e];
                          int64_t off = dense ? e : 0;
                          for (int64_t d = rank + 1, rest = e; !dense && d >= 0; --d) {
                            off += rest % dims[d] * a.w_strides[d];
                            rest /= dims[d];
                          }
                          if (a.dtype == DType::kFloat32) {
                            static_cast<float*>(a.w)[off] = v;
                          } else if (a.dtype == DType::kBFloat16) {
                            static_cast<BFloat16*>(a.w)[off] = BFloat16(v);
                          } else {
                            static_cast<Half*>(a.w)[off] = Half(v);
                          }
                        }
                        const auto n = static_cast<std::uint64_t>(hi - lo);
                        npu_sim::record_traffic(ctx, n * static_cast<std::uint64_t>(units) * 4,
                                                n * elem_size(a.dtype), 0, n * static_cast<std::uint64_t>(units));
                      });
}

}  // namespace

bool dnnl_conv(npu_sim::Stream stream, const ConvNd& full, ConvPass pass, npu_sim::Status* status) {
  if (!enabled() || full.batch <= 0) return false;
  if (full.dtype != DType::kFloat32 && full.dtype != DType::kBFloat16 && full.dtype != DType::kFloat16) return false;
  // Trailing input rows no output reaches (a negative right padding, e.g. a 1x1 stride-2 conv of an even
  // size) are cropped from the view oneDNN sees; backward-input zeroes their gradient itself.
  ConvNd a = full;
  bool cropped = false;
  {
    const Geometry g = geometry(full);
    for (int i = 0; i < full.rank; ++i) {
      if (g.pad_r[i] < 0) a.in[i] += g.pad_r[i], cropped = true;
    }
  }
  // A 16-bit transposed convolution's bias would round twice (oneDNN rounds its result): the tiled path adds
  // it to the fp32 accumulator.
  if (pass == ConvPass::kBackwardInput && a.bias != nullptr && a.dtype != DType::kFloat32) return false;
  const int64_t threads = core_threads();
  // An ungrouped weight gradient by images, each slice into an fp32 partial, where output-channel slices would
  // be narrower than 32 (oneDNN's weight-gradient kernels block output channels by 32-64: on the AMX Xeon a bf16
  // conv3d slice of 16 of 32 channels cost as much as all 32, 1.53 against 1.69 ms, and one image of all 32 0.80)
  // and every slice has output pixels enough that adding the partials is small beside its products. With wider
  // channel slices the partials lost (4 x 256 x 14^2 bf16: 4.4 against 0.8 ms).
  constexpr int64_t kMinPixelsPerPartial = 256, kMinChannelsPerSlice = 32;
  const int64_t welems = weight_elems(a);
  const auto make_plan = [&](bool partials) {
    Plan plan;
    if (a.groups > 1 && (pass == ConvPass::kBackwardWeight || a.batch < threads)) {
      plan.by = SplitBy::kGroups;  // whole groups: a weight gradient's sums stay within its slice
      plan.units = std::min<int64_t>(threads, a.groups);
    } else if (partials || (pass != ConvPass::kBackwardWeight && (a.batch >= threads || a.groups > 1))) {
      plan.by = SplitBy::kImages;
      plan.units = std::min<int64_t>(threads, a.batch);
    } else {
      plan.by = pass == ConvPass::kBackwardInput ? SplitBy::kInChannels : SplitBy::kOutChannels;
      const int64_t channels = pass == ConvPass::kBackwardInput ? a.in_channels : a.out_channels;
      plan.units = std::min<int64_t>(threads, std::max<int64_t>(1, channels / 16));
    }
    return plan;
  };
  // Plan on this thread: every slice shape must have a JIT implementation (else the tiled path runs); the
  // primitives prepared here stay in this thread's cache (the core threads prepare their own).
  const auto all_jit = [&](const Plan& plan, bool partials) {
    try {
      for (int64_t u = 0; u < std::min<int64_t>(plan.units, 2); ++u) {
        const SliceMem m = slice_mem(a, plan.slice(a, u));
        if (!prepared(pass, a, partials ? with_partial_weight(a, m, nullptr) : m).jit) return false;
      }
    } catch (const dnnl::error&) {
      return false;
    }
    return true;
  };
  bool partials = pass == ConvPass::kBackwardWeight && a.groups == 1 && threads > 1 &&
                  a.out_channels < kMinChannelsPerSlice * threads && a.batch >= threads &&
                  a.batch / threads * product(a.out, a.rank) >= kMinPixelsPerPartial;
  Plan plan = make_plan(partials);
  // (fp16 operands with an fp32 gradient have no JIT kernel on every CPU: then the channel slices)
  if (partials && !all_jit(plan, true)) plan = make_plan(partials = false);
  if (!partials && !all_jit(plan, false)) return false;
  std::shared_ptr<float[]> partial;
  if (partials) partial.reset(new float[static_cast<std::size_t>(plan.units * welems)]);
  const auto es = static_cast<std::uint64_t>(elem_size(a.dtype));
  static constexpr const char* kNames[2][3] = {
      {"conv2d_forward_onednn", "conv2d_backward_input_onednn", "conv2d_backward_weight_onednn"},
      {"conv3d_forward_onednn", "conv3d_backward_input_onednn", "conv3d_backward_weight_onednn"}};
  const char* name = kNames[a.rank == 3][static_cast<int>(pass)];
  *status = parallel_for(stream, name, plan.units, 1,
                         [a, full, cropped, plan, pass, es, partial, welems](int64_t begin, int64_t end,
                                                                             const npu_sim::BlockContext& ctx) {
                           for (int64_t u = begin; u < end; ++u) {
                             const Slice s = plan.slice(a, u);
                             const SliceMem m = slice_mem(a, s);
                             run_slice(pass, a, s,
                                       partial ? with_partial_weight(a, m, partial.get() + u * welems) : m);
                             if (pass == ConvPass::kBackwardInput && cropped) zero_unreached(full, a.in, s);
                             if (pass == ConvPass::kBackwardInput && a.bias != nullptr) {
                               add_channel_bias(full, s);
                             }
                             // Launch records as the Cube's implicit GEMM moves it (see gemm_direct):
                             // M = images x output pixels, N = output channels, K = C / groups x KH x KW.
                             const auto mm = static_cast<std::uint64_t>(s.n * product(a.out, a.rank));
                             const auto nn = static_cast<std::uint64_t>(s.o);
                             const auto kk = static_cast<std::uint64_t>(s.c / s.groups * product(a.kernel, a.rank));
                             const std::uint64_t out = pass == ConvPass::kForward ? mm * nn
                                                       : pass == ConvPass::kBackwardInput
                                                           ? static_cast<std::uint64_t>(s.n * s.c * product(a.in, a.rank))
                                                           : nn * kk;
                             npu_sim::record_traffic(ctx, es * 2 * mm * nn * kk / kCubeTile, es * out, 2 * mm * nn * kk,
                                                     0);
                           }
                         });
  if (partial && *status == npu_sim::Status::kSuccess) *status = add_partials(stream, a, partial, plan.units, welems);
  return true;
}

#else

bool dnnl_conv(npu_sim::Stream, const ConvNd&, ConvPass, npu_sim::Status*) { return false; }

#endif

}  // namespace detail

const char* conv_library_name() {
#ifdef NPU_SIM_HAVE_DNNL
  static const std::string name = [] {
    return detail::enabled() ? detail::dnnl_version_name() : std::string("none");
  }();
  return name.c_str();
#else
  return "none";
#endif
}

namespace detail {

ConvNd conv_nd(const Conv2dArgs& a) {
  ConvNd c;
  c.dtype = a.dtype;
  c.rank = 2;
  c.batch = a.batch, c.in_channels = a.in_channels, c.out_channels = a.out_channels, c.groups = a.groups;
  const int64_t in[] = {a.in_h, a.in_w}, out[] = {a.out_h, a.out_w}, k[] = {a.kernel_h, a.kernel_w};
  const int64_t st[] = {a.stride_h, a.stride_w}, pad[] = {a.pad_h, a.pad_w}, dil[] = {a.dilation_h, a.dilation_w};
  for (int i = 0; i < 2; ++i) {
    c.in[i] = in[i], c.out[i] = out[i], c.kernel[i] = k[i], c.stride[i] = st[i], c.pad[i] = pad[i];
    c.dilation[i] = dil[i];
  }
  c.x = a.x, c.w = a.w, c.y = a.y;
  std::copy(a.x_strides, a.x_strides + 4, c.x_strides);
  std::copy(a.w_strides, a.w_strides + 4, c.w_strides);
  std::copy(a.y_strides, a.y_strides + 4, c.y_strides);
  c.bias = a.bias, c.bias_stride = a.bias_stride;
  return c;
}

ConvNd conv_nd(const Conv3dArgs& a) {
  ConvNd c;
  c.dtype = a.dtype;
  c.rank = 3;
  c.batch = a.batch, c.in_channels = a.in_channels, c.out_channels = a.out_channels, c.groups = a.groups;
  for (int i = 0; i < 3; ++i) {
    c.in[i] = a.in[i], c.out[i] = a.out[i], c.kernel[i] = a.kernel[i], c.stride[i] = a.stride[i];
    c.pad[i] = a.pad[i], c.dilation[i] = a.dilation[i];
  }
  c.x = a.x, c.w = a.w, c.y = a.y;
  std::copy(a.x_strides, a.x_strides + 5, c.x_strides);
  std::copy(a.w_strides, a.w_strides + 5, c.w_strides);
  std::copy(a.y_strides, a.y_strides + 5, c.y_strides);
  c.bias = a.bias, c.bias_stride = a.bias_stride;
  return c;
}

}  // namespace detail

// ---- conv3d: oneDNN, then the 2-D slices of conv3d_slices.cpp (float64) ----

npu_sim::Status conv3d_validate(const Conv3dArgs& a, const char** why) {
  const char* reason = nullptr;
  bool sizes = a.batch >= 0 && a.in_channels > 0 && a.out_channels > 0, geometry = true, out_ok = true;
  for (int i = 0; i < 3; ++i) {
    sizes = sizes && a.in[i] > 0 && a.out[i] > 0 && a.kernel[i] > 0;
    geometry = geometry && a.stride[i] > 0 && a.dilation[i] > 0 && a.pad[i] >= 0;
    out_ok = out_ok && a.out[i] <= (a.in[i] + 2 * a.pad[i] - a.dilation[i] * (a.kernel[i] - 1) - 1) / a.stride[i] + 1;
  }
  if (a.dtype != DType::kFloat32 && a.dtype != DType::kFloat64 && a.dtype != DType::kFloat16 &&
      a.dtype != DType::kBFloat16) {
    reason = "dtype must be float32, float64, float16 or bfloat16";
  } else if (!sizes) {
    reason = "sizes must be positive";
  } else if (!geometry) {
    reason = "stride and dilation must be positive, padding non-negative";
  } else if (a.groups <= 0 || a.in_channels % a.groups != 0 || a.out_channels % a.groups != 0) {
    reason = "groups must divide in_channels and out_channels";
  } else if (!out_ok) {
    reason = "output size does not match input size, kernel, stride, padding and dilation";
  }
  if (why != nullptr) *why = reason;
  return reason == nullptr ? npu_sim::Status::kSuccess : npu_sim::Status::kInvalidValue;
}

namespace {
npu_sim::Status conv3d_pass(npu_sim::Stream stream, const Conv3dArgs& a, detail::ConvPass pass) {
  if (auto st = conv3d_validate(a); st != npu_sim::Status::kSuccess) return st;
  npu_sim::Status st = npu_sim::Status::kSuccess;
  if (detail::dnnl_conv(stream, detail::conv_nd(a), pass, &st)) return st;
  return detail::conv3d_by_slices(stream, a, pass);
}
}  // namespace

std::size_t conv3d_backward_input_scratch_bytes(const Conv3dArgs& a) { return detail::conv3d_slices_scratch_bytes(a); }

npu_sim::Status conv3d_forward(npu_sim::Stream stream, const Conv3dArgs& a) {
  return conv3d_pass(stream, a, detail::ConvPass::kForward);
}
npu_sim::Status conv3d_backward_input(npu_sim::Stream stream, const Conv3dArgs& a) {
  return conv3d_pass(stream, a, detail::ConvPass::kBackwardInput);
}
npu_sim::Status conv3d_backward_weight(npu_sim::Stream stream, const Conv3dArgs& a) {
  return conv3d_pass(stream, a, detail::ConvPass::kBackwardWeight);
}

namespace detail {

}  // namespace detail
}  // namespace npu_kernels
