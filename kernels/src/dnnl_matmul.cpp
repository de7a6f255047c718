// The Cube unit's matmul on oneDNN 3.2: bf16 x bf16 and fp16 x fp16 with fp32 accumulation, rounded once to
// the 16-bit type (what an NPU Cube does), on the CPU's AVX512-BF16 / AVX512-FP16 / AMX units through oneDNN's
// brgemm kernels; fp32, where oneDNN's brgemm beat OpenBLAS by 5-13% (square 256-2048 and the GPT-mini's
// shapes, one thread each); and int8 x int8 into int32 (quantized linear layers) on the CPU's VNNI / AMX-INT8.
//
// Why oneDNN (benchmarks/bench_matmul.py, docs/benchmarks.md): it is the library PyTorch's own CPU bf16
// path calls, its JIT picks the machine's matrix instructions at run time, and on a 2-core Zen 4 it runs
// a 2048^3 bf16 GEMM at ~420 GFLOP/s against ~165 for our staged path (bf16 widened into fp32 UB panels
// for OpenBLAS's sgemm). Why 3.2 from PyPI (onednn-cpu-gomp) over Debian's 2.6: 2.6 refuses fp16 matmul even
// on an AVX512-FP16 CPU, and on an AMX Xeon 3.2 ran a one-thread 1024^3 bf16 matmul at 801-887 GFLOP/s
// against 2.6's 316-593 (AMX brgemm); on Zen 4 the two are equal (bf16 483-487, fp32 216-217 GFLOP/s).
//
// Threading: each AI-core thread calls oneDNN on its own slice of C with OpenMP held to one thread in
// that thread (the core pool is the parallelism, as for OpenBLAS). Each core thread keeps its matmul primitives by
// shape (matmul_for: no primitive-descriptor dispatch per call), its own oneDNN stream and scratchpad
// (dnnl_context.h; user-managed scratchpad, so no state is shared between concurrent executions).
// Each type is served only where oneDNN has a JIT kernel for it on this CPU (dnnl_<type>_name() not null; its
// reference loop is slower than our own paths), fp32 only on brgemm and int8 only where exact (names() below).
// A 2-core Zen 3 (AVX2, no AVX-512) refuses bf16 and fp16 and has fp32 and int8 kernels we do not use: there
// fp32 calls OpenBLAS, bf16 takes the staged path, fp16 is widened to fp32, int8 runs our exact loop, and only
// convolution runs on oneDNN (dnnl_conv.cpp). NPU_SIM_GEMM_DNNL=0 or a build without oneDNN turn it off for
// every type.
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "gemm_tiling.h"

#ifdef NPU_SIM_HAVE_DNNL
#include "dnnl_context.h"
#endif

namespace npu_kernels {
namespace detail {

#ifdef NPU_SIM_HAVE_DNNL
namespace {

using dnnl::memory;

memory::desc matrix_desc(memory::data_type dt, int64_t rows, int64_t cols, bool trans, int64_t ld) {
  // Row-major with leading dimension ld, or its transpose (column-major storage of op(X)).
  return memory::desc({rows, cols}, dt, trans ? memory::dims{1, ld} : memory::dims{ld, 1});
}

// src and weights in dt, dst in dst_dt (dt when undef).
dnnl::matmul::primitive_desc matmul_pd(const dnnl::engine& eng, memory::data_type dt, bool ta, bool tb, int64_t m,
                                       int64_t n, int64_t k, float alpha, int64_t lda, int64_t ldb, float beta,
                                       int64_t ldc, memory::data_type dst_dt = memory::data_type::undef) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // alpha scales the fp32 accumulator, then beta * C is added: one rounding into the destination type
  dnnl::post_ops po;
  if (alpha != 1.0f) po.append_eltwise(dnnl::algorithm::eltwise_linear, alpha, 0.0f);
  if (beta != 0.0f) po.append_sum(beta);
  attr.set_post_ops(po);
  return dnnl::matmul::primitive_desc(eng, matrix_desc(dt, m, k, ta, lda), matrix_desc(dt, k, n, tb, ldb),
                                      matrix_desc(dst_dt == memory::data_type::undef ? dt : dst_dt, m, n, false, ldc),
                                      attr);
}

// "onednn <version> <implementation>" when a JIT implementation ("brg:...", "gemm:jit...") serves a probe shape
// of these types on this CPU, empty when only the reference loop does (a CPU without AVX-512 may get that one;
// our own paths are faster then) or oneDNN refuses the types.
std::string probe(memory::data_type dt, memory::data_type dst_dt = memory::data_type::undef) {
  try {
    const std::string impl =
        matmul_pd(dnnl_engine(), dt, false, false, 64, 64, 64, 1.0f, 64, 64, 0.0f, 64, dst_dt).impl_info_str();
    if (impl.find("ref") != std::string::npos) return std::string();
    return dnnl_version_name() + " " + impl;
  } catch (const dnnl::error&) {
    return std::string();
  }
}

// Whether oneDNN's int8 matmul is exact here. Without VNNI (an AVX2-only CPU) its JIT kernel sums pairs of
// u8 x s8 products in 16 bits with saturation (vpmaddubsw), which oneDNN documents and leaves to callers that
// quantize to 7 bits: 127 x 127 summed over k = 64 came out wrong by up to 4x on a Zen 3. Such a kernel is
// not used. Checked once, on a shape whose every pair saturates 16 bits.
bool s8_exact() {
  constexpr int64_t m = 8, n = 16, k = 64;
  std::vector<int8_t> a(m * k), b(k * n);
  std::vector<int32_t> c(m * n, 0);
  for (int64_t i = 0; i < m * k; ++i) a[i] = static_cast<int8_t>(i % 3 == 0 ? -128 : 127);
  for (int64_t i = 0; i < k * n; ++i) b[i] = static_cast<int8_t>(i % 5 == 0 ? -128 : 127);
  try {
    const auto pd = matmul_pd(dnnl_engine(), memory::data_type::s8, false, false, m, n, k, 1.0f, k, n, 0.0f, n,
                              memory::data_type::s32);
    // on the calling thread alone, as the core threads run oneDNN (no OpenMP team started for the probe)
    struct OneOmpThread {
      const int saved = omp_get_max_threads();
      OneOmpThread() { omp_set_num_threads(1); }
      ~OneOmpThread() { omp_set_num_threads(saved); }
    } one_thread;
    dnnl::stream stream(dnnl_engine());
    std::vector<unsigned char> scratch(pd.scratchpad_desc().get_size());
    memory ma(pd.src_desc(), dnnl_engine(), a.data()), mb(pd.weights_desc(), dnnl_engine(), b.data());
    memory mc(pd.dst_desc(), dnnl_engine(), c.data()), ms(pd.scratchpad_desc(), dnnl_engine(), scratch.data());
    dnnl::matmul(pd).execute(stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc},
                                      {DNNL_ARG_SCRATCHPAD, ms}});
    stream.wait();
  } catch (const dnnl::error&) {
    return false;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int32_t want = 0;
      for (int64_t p = 0; p < k; ++p) want += int32_t{a[i * k + p]} * int32_t{b[p * n + j]};
      if (c[i * n + j] != want) return false;
    }
  return true;
}

// The JIT implementation for each type, probed once (empty: not served).
struct DnnlNames {
  std::string f32, bf16, f16, s8;
};

const DnnlNames& names() {
  static const DnnlNames instance = [] {
    DnnlNames s;
    if (!dnnl_enabled()) return s;
    s.f32 = probe(memory::data_type::f32);
    // fp32 only on its brgemm kernels (AVX-512 and up), which beat OpenBLAS by 5-13% on a Zen 4. The AVX2
    // kernel ("gemm:jit:f32") lost to OpenBLAS on a Zen 3: 512^3 3.5-6.8 ms against 2.0-2.3 ms, 256^3 and the
    // GPT-mini's shapes level or worse.
    if (s.f32.find("brg") == std::string::npos) s.f32.clear();
    s.bf16 = probe(memory::data_type::bf16);
    const char* f16_off = std::getenv("NPU_SIM_GEMM_DNNL_F16");
    if (!(f16_off != nullptr && std::string(f16_off) == "0")) s.f16 = probe(memory::data_type::f16);
    s.s8 = probe(memory::data_type::s8, memory::data_type::s32);
    if (!s.s8.empty() && !s8_exact()) s.s8.clear();
    return s;
  }();
  return instance;
}

const char* or_null(const std::string& name) { return name.empty() ? nullptr : name.c_str(); }

}  // namespace

const dnnl::engine& dnnl_engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

bool dnnl_enabled() {
  static const bool on = [] {
    const char* off = std::getenv("NPU_SIM_GEMM_DNNL");
    return !(off != nullptr && std::string(off) == "0");
  }();
  return on;
}
const char* dnnl_f32_name() { return or_null(names().f32); }
const char* dnnl_bf16_name() { return or_null(names().bf16); }
const char* dnnl_f16_name() { return or_null(names().f16); }
const char* dnnl_s8_name() { return or_null(names().s8); }

namespace {

// A matmul ready to run: the primitive, its operands' descriptors, and which operands it wants copied into
// dense rows first (pack_*: the primitive was built for leading dimension = row length).
struct Matmul {
  dnnl::matmul prim;
  memory::desc src, weights, dst, scratchpad;
  bool pack_a = false, pack_b = false, pack_c = false;
  std::string impl;  // oneDNN's implementation name, " (dense copies)" appended when it packs
  // The call's memory objects and argument map, made once and pointed at each call's buffers: making them per call
  // (four allocations and a hash map) cost as much as a small product (attention's 58 x 512 x 64 tiles).
  std::unordered_map<int, memory> args;
};

// Everything a matmul's primitive depends on.
struct MatmulKey {
  memory::data_type dt, dst_dt;
  bool ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  bool operator==(const MatmulKey& o) const {
    return dt == o.dt && dst_dt == o.dst_dt && ta == o.ta && tb == o.tb && m == o.m && n == o.n && k == o.k &&
           lda == o.lda && ldb == o.ldb && ldc == o.ldc && alpha == o.alpha && beta == o.beta;
  }
};
struct MatmulKeyHash {
  std::size_t operator()(const MatmulKey& key) const {
    std::size_t h = static_cast<std::size_t>(key.dt) * 31 + static_cast<std::size_t>(key.dst_dt);
    for (int64_t v : {key.m, key.n, key.k, key.lda, key.ldb, key.ldc}) h = h * 1000003u ^ static_cast<std::size_t>(v);
    return h * 4 + (key.ta ? 2 : 0) + (key.tb ? 1 : 0);
  }
};

// The core thread's matmuls by shape. Building the primitive descriptor is oneDNN's implementation dispatch
// (~20-40 us); its primitive cache only saves the JIT after it, so small GEMMs (the GPT-mini's 512 x 128 x 384
// bf16 linear: ~70 us in all) paid it on every call. Owned by one core thread: no lock. Cleared when full.
Matmul& matmul_for(const MatmulKey& key) {
  thread_local std::unordered_map<MatmulKey, Matmul, MatmulKeyHash> cache;
  constexpr std::size_t kMaxEntries = 512;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= kMaxEntries) cache.clear();
  const auto build = [&](int64_t lda, int64_t ldb, int64_t ldc) {
    return matmul_pd(dnnl_engine(), key.dt, key.ta, key.tb, key.m, key.n, key.k, key.alpha, lda, ldb, key.beta, ldc,
                     key.dst_dt);
  };
  auto pd = build(key.lda, key.ldb, key.ldc);
  // oneDNN 3.2's brgemm kernels (AMX, AVX512-FP16/BF16, AVX-512) take only dense operands: a leading dimension
  // longer than the row (a slice of a wider matrix: the core threads' M or N slices of a transposed A, B or C,
  // a strided view) sends the call to gemm:jit (no AMX: bf16 at the AVX512-BF16 dot-product rate) or, for fp16,
  // to the reference loop (a GPT-mini fp16 backward GEMM of 256 x 512 x 128 took 470 ms there instead of
  // ~0.1). Such a call copies the padded operands into dense rows in the core thread's scratch instead: O(mk +
  // kn + mn) copies against O(mnk) arithmetic on the machine's matrix unit.
  const int64_t dense_lda = key.ta ? key.m : key.k, dense_ldb = key.tb ? key.k : key.n;
  const bool padded = key.lda != dense_lda || key.ldb != dense_ldb || key.ldc != key.n;
  bool pack = false;
  if (padded && std::string(pd.impl_info_str()).find("brg") == std::string::npos) {
    auto dense = build(dense_lda, dense_ldb, key.n);
    if (std::string(dense.impl_info_str()).find("brg") != std::string::npos) {
      pd = std::move(dense);
      pack = true;
    }
  }
  Matmul mm{dnnl::matmul(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc(), pd.scratchpad_desc(),
            pack && key.lda != dense_lda, pack && key.ldb != dense_ldb, pack && key.ldc != key.n,
            std::string(pd.impl_info_str()) + (pack ? " (dense copies)" : ""), {}};
  const dnnl::engine& eng = dnnl_engine();
  mm.args = {{DNNL_ARG_SRC, memory(mm.src, eng, DNNL_MEMORY_NONE)},
             {DNNL_ARG_WEIGHTS, memory(mm.weights, eng, DNNL_MEMORY_NONE)},
             {DNNL_ARG_DST, memory(mm.dst, eng, DNNL_MEMORY_NONE)},
             {DNNL_ARG_SCRATCHPAD, memory(mm.scratchpad, eng, DNNL_MEMORY_NONE)}};
  return cache.emplace(key, std::move(mm)).first->second;
}

// Copies rows x cols elements of elem bytes from rows ld elements apart into dense rows (or back: to_dense false).
void copy_rows(void* dense, const void* strided, int64_t rows, int64_t cols, int64_t ld, std::size_t elem,
               bool to_dense) {
  const std::size_t row = static_cast<std::size_t>(cols) * elem, stride = static_cast<std::size_t>(ld) * elem;
  auto* d = static_cast<unsigned char*>(dense);
  auto* s = static_cast<unsigned char*>(const_cast<void*>(strided));
  for (int64_t r = 0; r < rows; ++r, d += row, s += stride) {
    if (to_dense) {
      std::memcpy(d, s, row);
    } else {
      std::memcpy(s, d, row);
    }
  }
}

void dnnl_gemm(memory::data_type dt, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const void* a, int64_t lda, const void* b, int64_t ldb, float beta, void* c, int64_t ldc,
               memory::data_type dst_dt = memory::data_type::undef) {
  DnnlCoreThread& t = DnnlCoreThread::mine();
  Matmul& mm = matmul_for({dt, dst_dt, trans_a, trans_b, m, n, k, lda, ldb, ldc, alpha, beta});
  const std::size_t es = memory::data_type_size(dt);
  const std::size_t cs = memory::data_type_size(dst_dt == memory::data_type::undef ? dt : dst_dt);
  // op(A) is stored as (trans ? k x m : m x k) rows, op(B) as (trans ? n x k : k x n)
  const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k, b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  void* ad = const_cast<void*>(a);
  void* bd = const_cast<void*>(b);
  void* cd = c;
  if (mm.pack_a) copy_rows(ad = t.take(1, a_rows * a_cols * es), a, a_rows, a_cols, lda, es, true);
  if (mm.pack_b) copy_rows(bd = t.take(2, b_rows * b_cols * es), b, b_rows, b_cols, ldb, es, true);
  if (mm.pack_c) {
    cd = t.take(4, static_cast<std::size_t>(m * n) * cs);
    if (beta != 0.0f) copy_rows(cd, c, m, n, ldc, cs, true);
  }
  mm.args[DNNL_ARG_SRC].set_data_handle(ad);
  mm.args[DNNL_ARG_WEIGHTS].set_data_handle(bd);
  mm.args[DNNL_ARG_DST].set_data_handle(cd);
  mm.args[DNNL_ARG_SCRATCHPAD].set_data_handle(t.take(0, mm.scratchpad.get_size()));
  mm.prim.execute(t.stream, mm.args);
  t.stream.wait();
  if (mm.pack_c) copy_rows(cd, c, m, n, ldc, cs, false);
}
}  // namespace

std::string dnnl_gemm_impl(DType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, int64_t lda,
                           int64_t ldb, int64_t ldc) {
  const memory::data_type dt = dtype == DType::kFloat32    ? memory::data_type::f32
                               : dtype == DType::kBFloat16 ? memory::data_type::bf16
                               : dtype == DType::kFloat16  ? memory::data_type::f16
                                                           : memory::data_type::s8;
  const memory::data_type dst_dt = dt == memory::data_type::s8 ? memory::data_type::s32 : memory::data_type::undef;
  return matmul_for({dt, dst_dt, trans_a, trans_b, m, n, k, lda, ldb, ldc, 1.0f, 0.0f}).impl;
}

void dnnl_gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a,
                    int64_t lda, const BFloat16* b, int64_t ldb, float beta, BFloat16* c, int64_t ldc) {
  dnnl_gemm(memory::data_type::bf16, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void dnnl_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  dnnl_gemm(memory::data_type::f32, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void dnnl_gemm_bf16_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a,
                        int64_t lda, const BFloat16* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  dnnl_gemm(memory::data_type::bf16, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
            memory::data_type::f32);
}

void dnnl_gemm_s8(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda,
                  const int8_t* b, int64_t ldb, int32_t* c, int64_t ldc) {
  dnnl_gemm(memory::data_type::s8, trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc,
            memory::data_type::s32);
}

void dnnl_gemm_f16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const Half* a,
                   int64_t lda, const Half* b, int64_t ldb, float beta, Half* c, int64_t ldc) {
  dnnl_gemm(memory::data_type::f16, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#else  // built without oneDNN

bool dnnl_enabled() { return false; }
std::string dnnl_gemm_impl(DType, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) { return {}; }
const char* dnnl_f32_name() { return nullptr; }
const char* dnnl_bf16_name() { return nullptr; }
const char* dnnl_f16_name() { return nullptr; }
const char* dnnl_s8_name() { return nullptr; }
void dnnl_gemm_bf16(bool, bool, int64_t, int64_t, int64_t, float, const BFloat16*, int64_t, const BFloat16*, int64_t,
                    float, BFloat16*, int64_t) {
  std::abort();  // unreachable: callers check dnnl_bf16_name()
}
void dnnl_gemm_f32(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
                   float*, int64_t) {
  std::abort();
}
void dnnl_gemm_bf16_f32(bool, bool, int64_t, int64_t, int64_t, float, const BFloat16*, int64_t, const BFloat16*,
                        int64_t, float, float*, int64_t) {
  std::abort();
}
void dnnl_gemm_s8(bool, bool, int64_t, int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int64_t, int32_t*,
                  int64_t) {
  std::abort();
}
void dnnl_gemm_f16(bool, bool, int64_t, int64_t, int64_t, float, const Half*, int64_t, const Half*, int64_t, float,
                   Half*, int64_t) {
  std::abort();
}

#endif

}  // namespace detail

const char* gemm_library_name(DType dtype) {
  const char* name = dtype == DType::kFloat32    ? detail::dnnl_f32_name()
                     : dtype == DType::kBFloat16 ? detail::dnnl_bf16_name()
                     : dtype == DType::kFloat16  ? detail::dnnl_f16_name()
                                                 : nullptr;
  return name != nullptr ? name : "none";
}

}  // namespace npu_kernels
