"""torch_npu's fused ops (namespace npu) against CPU PyTorch compositions of the same math: forward,
backward, fake kernels, errors naming the argument, and the GM traffic the launch records show."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim

MiB = 1 << 20


def npu(*ts):
    return [t.to("npu") for t in ts]


# --- npu_linear_add_gelu ------------------------------------------------------------------------------------

@pytest.mark.parametrize("m,k,n", [(1024, 1024, 1024), (37, 129, 200), (1, 1, 1), (130, 0, 5)])
def test_linear_add_gelu_matches_cpu(m, k, n, native_only):
    x, w, b = torch.randn(m, k), torch.randn(k, n) / max(k, 1) ** 0.5, torch.randn(n)
    out = torch.ops.npu.npu_linear_add_gelu(*npu(x, w, b))
    torch.testing.assert_close(out.cpu(), F.gelu(x @ w + b), rtol=1e-4, atol=1e-5)
    assert torch_npu_sim.npu_linear_add_gelu is not None


def test_linear_add_gelu_backward_matches_cpu():
    x, w, b = torch.randn(33, 40, dtype=torch.float32), torch.randn(40, 17), torch.randn(17)
    ref = [t.clone().requires_grad_() for t in (x, w, b)]
    F.gelu(ref[0] @ ref[1] + ref[2]).pow(2).sum().backward()
    dev = [t.to("npu").requires_grad_() for t in (x, w, b)]
    torch_npu_sim.npu_linear_add_gelu(*dev).pow(2).sum().backward()
    for r, d in zip(ref, dev):
        torch.testing.assert_close(d.grad.cpu(), r.grad, rtol=1e-4, atol=1e-4)


def test_linear_add_gelu_fake_kernel_propagates_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x, w, b = torch.empty(8, 5, device="npu"), torch.empty(5, 3, device="npu"), torch.empty(3, device="npu")
        out = torch.ops.npu.npu_linear_add_gelu(x, w, b)
    assert out.shape == (8, 3) and out.device.type == "npu"


def test_linear_add_gelu_bad_input_names_the_argument():
    x, w, b = torch.randn(4, 3, device="npu"), torch.randn(3, 2, device="npu"), torch.randn(2, device="npu")
    with pytest.raises(RuntimeError, match=r"npu_linear_add_gelu: expected argument 'x' on an npu device"):
        torch.ops.npu.npu_linear_add_gelu(x.cpu(), w.cpu(), b.cpu())
    with pytest.raises(RuntimeError, match=r"npu_linear_add_gelu.*weight must be \[K, N\]"):
        torch.ops.npu.npu_linear_add_gelu(x, w.t().contiguous(), b)
    with pytest.raises(RuntimeError, match=r"npu_linear_add_gelu.*'x' has dtype Half"):
        torch.ops.npu.npu_linear_add_gelu(x.half(), w, b)
    with pytest.raises(RuntimeError, match=r"npu_linear_add_gelu.*bias must be \[N\]"):
        torch.ops.npu.npu_linear_add_gelu(x, w, b[:1])
    with pytest.raises(RuntimeError, match=r"same device|npu_linear_add_gelu"):
        torch.ops.npu.npu_linear_add_gelu(x, w.cpu(), b)


def test_linear_add_gelu_gm_traffic_against_the_unfused_sequence():
    # DESIGN §10's arithmetic for [1024, 1024] x [1024, 1024] float32. The matmul's panels: every 128 x 128
    # output tile loads its 128 rows of x and 128 columns of w over all of K (the UB holds no more), so
    # 1024^3 * 4 B * (1/128 + 1/128) = 64 MiB are read, in the fused kernel and (as the Cube would tile it)
    # in the unfused mm alike; C is written once, 4 MiB. Unfused, the bias add then reads 8 MiB and writes
    # 4 MiB (the [N] bias broadcast is counted per element, as the elementwise engine reads it) and GELU
    # reads 4 and writes 4 MiB: 20 MiB more than fused, which reads the bias row once per tile (64 x 512 B).
    x, w, b = npu(torch.randn(1024, 1024), torch.randn(1024, 1024) / 32, torch.randn(1024))
    with torch_npu_sim.record_launches() as fused:
        y_fused = torch.ops.npu.npu_linear_add_gelu(x, w, b)
    with torch_npu_sim.record_launches() as unfused:
        y_unfused = F.gelu(torch.mm(x, w) + b)
    torch.testing.assert_close(y_fused.cpu(), y_unfused.cpu(), rtol=1e-4, atol=1e-5)
    assert [r["kernel"] for r in fused.records] == ["linear_add_gelu"]
    assert (fused.gm_read, fused.gm_write) == (64 * MiB + 64 * 512, 4 * MiB)
    assert fused.cube_flops == 2 * 1024 ** 3
    per = unfused.by_kernel()
    assert sorted(per) == ["add", "gelu", "gemm"]
    assert (per["gemm"]["gm_read"], per["gemm"]["gm_write"], per["gemm"]["cube_flops"]) == (64 * MiB, 4 * MiB,
                                                                                             2 * 1024 ** 3)
    assert (per["add"]["gm_read"], per["add"]["gm_write"]) == (8 * MiB, 4 * MiB)
    assert (per["gelu"]["gm_read"], per["gelu"]["gm_write"]) == (4 * MiB, 4 * MiB)
    assert (unfused.gm_read + unfused.gm_write) - (fused.gm_read + fused.gm_write) == 20 * MiB - 64 * 512
