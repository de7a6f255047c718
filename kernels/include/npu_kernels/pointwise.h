// Pointwise op catalogue of the kernel library (torch-free): unary, binary and ternary ops with their
// scalar parameters, run by the elementwise engine. The adapter picks the op and the dtypes.
#pragma once

#include "npu_kernels/elementwise.h"
#include "npu_sim/runtime.h"

namespace npu_kernels {

enum class UnaryOp {
  // any dtype
  kNeg, kAbs, kSign, kSquare, kRelu, kBitwiseNot, kLogicalNot, kIsnan, kIsinf, kIsfinite, kIsposinf,
  kIsneginf, kSignbit, kClamp, kFloor, kCeil, kRound, kTrunc, kFrac, kReciprocal, kHardtanh,
  // floating point only
  kSqrt, kRsqrt, kExp, kExp2, kExpm1, kLog, kLog2, kLog10, kLog1p, kSin, kCos, kTan, kAsin, kAcos, kAtan,
  kSinh, kCosh, kTanh, kAsinh, kAcosh, kAtanh, kSigmoid, kLogSigmoid, kErf, kErfc, kGelu, kGeluTanh, kSilu,
  kMish, kSoftplus, kLeakyRelu, kElu, kHardswish, kHardsigmoid, kNanToNum, kPowScalar, kRoundDecimals,
  kLgamma, kDigamma, kSinc, kLogit, kRelu6, kCeluSelu,
  kHardshrink, kSoftshrink,  // a: lambda
  kErfinv, kTrigamma,
  kFrexpMantissa,  // frexp's mantissa in [0.5, 1) (0, inf and NaN as they are)
  kFrexpExponent,  // frexp's exponent: writes int32 (0 for 0, inf and NaN), the iterator's out_dtype kInt32
  // special functions (special_ops.cpp), computed in double; float16/bfloat16 too
  kI0, kI0e, kI1, kI1e, kEntr,
  kPolygamma,  // i: the order n >= 2 (0 and 1 are kDigamma and kTrigamma)
  // special functions, float32/float64 only (as ATen's CPU and CUDA kernels)
  kModifiedBesselI0, kModifiedBesselI1, kModifiedBesselK0, kModifiedBesselK1, kScaledModifiedBesselK0,
  kScaledModifiedBesselK1, kBesselJ0, kBesselJ1, kBesselY0, kBesselY1, kSphericalBesselJ0, kAiryAi, kErfcx,
  kLogNdtr, kNdtri,
};

enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kDivTrunc, kDivFloor, kRemainder, kFmod, kPow, kAtan2, kMaximum, kMinimum, kFmax,
  kFmin, kHypot, kCopysign, kXlogy, kEq, kNe, kLt, kLe, kGt, kGe, kLogicalAnd, kLogicalOr, kLogicalXor,
  kBitwiseAnd, kBitwiseOr, kBitwiseXor, kLshift, kRshift,
  kGcd, kLcm,  // integers only (ATen's calc_gcd: Euclid on absolute values; lcm = |a / gcd * b|, 0 when gcd is)
  // backward helpers, operands in the order ATen's meta functions build them: (grad_output, saved
  // tensor), except threshold_backward and leaky_relu_backward which are (saved tensor, grad_output)
  kThresholdBackward, kSigmoidBackward, kTanhBackward, kGeluBackward, kGeluTanhBackward, kSiluBackward,
  kLeakyReluBackward, kEluBackward, kHardswishBackward, kHardsigmoidBackward, kSoftplusBackward,
  kHardtanhBackward, kMishBackward, kLogSigmoidBackward,
  kThreshold,  // (x, y): x <= a ? b : y  (threshold(x, t, v) runs it on (x, x))
  kLerpScalar,  // (start, end): start + a * (end - start), ATen's two-sided formula
  kHeaviside,   // (x, values): x == 0 ? values : x > 0
  kLogaddexp, kLogaddexp2,
  kLogitBackward,       // (grad, x), a: eps when has_a
  kHardshrinkBackward,  // (grad, x), a: lambda
  kSoftshrinkBackward,  // (grad, x), a: lambda
  kPrelu,               // (x, weight)
  kPreluGradWeight,     // (x, grad): the unreduced weight gradient
  kGlu,                 // (first half, second half): a * sigmoid(b)
  kNextafter,           // (x, y): the next value of x's dtype after x towards y, float dtypes only
  // special functions (special_ops.cpp), computed in double; float16/bfloat16 too
  kXlog1py, kIgamma, kIgammac,
  // special functions, float32/float64 only: zeta(x, q) and the polynomials (x, n)
  kZeta, kChebyshevT, kChebyshevU, kChebyshevV, kChebyshevW, kShiftedChebyshevT, kShiftedChebyshevU,
  kShiftedChebyshevV, kShiftedChebyshevW, kHermiteH, kHermiteHe, kLaguerreL, kLegendreP,
};

enum class TernaryOp {
  kWhere,  // (cond, x, y): cond ? x : y; cond is 1 byte per element (bool, or uint8 read as nonzero) whatever
           // in_dtype is, and x, y and the output have in_dtype (any dtype: the select moves bytes)
  kAddcmul, kAddcdiv, kLerp, kClampTensor,
  kPreluGradInput,  // (x, weight, grad): x > 0 ? grad : weight * grad
};

// Scalar parameters (alpha, min/max, negative slope, ...), meaning fixed per op in the .cpp files. On complex
// tensors `a` is the real part of a complex scalar (add's alpha, addcmul's value, lerp's weight, pow's
// exponent) and `ai` its imaginary part.
struct PointwiseParams {
  double a = 0.0, b = 0.0, c = 0.0;
  double ai = 0.0;
  bool has_a = false, has_b = false;
  int64_t i = 0;
};

const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);
const char* op_name(TernaryOp op);

// it.noutputs == 1 and it.ninputs == 1/2/3; dtypes in it.in_dtype / it.out_dtype (out is bool for
// predicates and comparisons, otherwise equal to in). Errors: kInvalidValue for an unsupported dtype.
npu_sim::Status unary(npu_sim::Stream stream, UnaryOp op, const ElementwiseIter& it, const PointwiseParams& p);
npu_sim::Status binary(npu_sim::Stream stream, BinaryOp op, const ElementwiseIter& it, const PointwiseParams& p);
npu_sim::Status ternary(npu_sim::Stream stream, TernaryOp op, const ElementwiseIter& it, const PointwiseParams& p);

bool is_predicate(UnaryOp op);   // output is bool
bool is_predicate(BinaryOp op);  // comparisons and logical ops: output is bool
bool is_float_only(UnaryOp op);
bool is_special(UnaryOp op);  // the special functions, run by special_ops.cpp
bool is_special(BinaryOp op);

}  // namespace npu_kernels
