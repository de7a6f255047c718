// The samplers' and bernoulli's dtype refusals at the kernel boundary: a non-floating input, or a count and
// prob of different dtypes, is kInvalidValue before any launch, and the output is left as it was.
#include <cstdint>
#include <vector>

#include "npu_kernels/random.h"
#include "test_kernels_util.h"

using npu_kernels::DType;
using npu_kernels::TensorDesc;

namespace {

template <typename T>
TensorDesc flat(DeviceBuf<T>& b, DType t) {
  TensorDesc d;
  d.data = b.ptr;
  d.dtype = t;
  d.ndim = 1;
  d.sizes[0] = static_cast<int64_t>(b.n);
  d.strides[0] = 1;
  return d;
}

}  // namespace

TEST(KernelsRandom, SamplersRefuseNonFloatingAndMixedDtypesAndWriteNothing) {
  npu_sim::Stream s = nullptr;
  ASSERT_OK(npu_sim::stream_create(0, &s));
  const npu_kernels::PhiloxState st{7, 0};
  DeviceBuf<float> out(std::vector<float>(8, -1.0f)), f(std::vector<float>(8, 2.0f));
  DeviceBuf<double> d(std::vector<double>(8, 0.5));
  DeviceBuf<int32_t> i(std::vector<int32_t>(8, 3));
  const TensorDesc o = flat(out, DType::kFloat32), fin = flat(f, DType::kFloat32), din = flat(d, DType::kFloat64),
                   iin = flat(i, DType::kInt32);
  EXPECT_EQ(npu_kernels::poisson(s, o, iin, st), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(npu_kernels::standard_gamma(s, flat(i, DType::kInt32), fin, st), npu_sim::Status::kInvalidValue);
  EXPECT_EQ(npu_kernels::binomial(s, o, fin, din, st), npu_sim::Status::kInvalidValue);  // count float, prob double
  EXPECT_EQ(npu_kernels::bernoulli_tensor(s, o, iin, st), npu_sim::Status::kInvalidValue);
  ASSERT_OK(npu_sim::stream_synchronize(s));
  for (float v : out.read()) EXPECT_EQ(v, -1.0f);
  // the floating forms still run: Poisson(2) draws are whole numbers >= 0
  ASSERT_OK(npu_kernels::poisson(s, o, fin, st));
  ASSERT_OK(npu_sim::stream_synchronize(s));
  for (float v : out.read()) EXPECT_TRUE(v >= 0.0f && v == static_cast<float>(static_cast<int>(v))) << v;
  ASSERT_OK(npu_sim::stream_destroy(s));
}
