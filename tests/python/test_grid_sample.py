"""F.grid_sample on npu against CPU: 2-D (bilinear, nearest, bicubic) and 3-D (trilinear, nearest), every padding
mode, align_corners both ways, sample points inside and outside [-1, 1]; forward, the input's and the grid's
gradients; float64 / float32 / float16 / bfloat16 (16-bit against CPU in float32 rounded once, CUDA's
arithmetic); empty batches; CPU's errors; no CPU fallback."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim

MODES_2D = ["bilinear", "nearest", "bicubic"]
MODES_3D = ["bilinear", "nearest"]
PADDINGS = ["zeros", "border", "reflection"]
TOL = {torch.float64: 1e-10, torch.float32: 2e-4}


def run(x, grid, mode, padding, align, wide=None):
    """Output and both gradients for one configuration; `wide` computes in that dtype and rounds back."""
    dtype = x.dtype
    if wide is not None:
        x, grid = x.to(wide), grid.to(wide)
    x, grid = x.clone().requires_grad_(), grid.clone().requires_grad_()
    out = F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(3)).to(out.dtype).to(out.device)
    out.backward(g)
    return [t.detach().cpu().to(dtype) for t in (out, x.grad, grid.grad)]


def inputs(rank, dtype, n=2, c=3):
    gen = torch.Generator().manual_seed(rank)
    spatial = (5, 6, 7) if rank == 3 else (6, 7)
    out_spatial = (3, 4, 2) if rank == 3 else (5, 4)
    x = torch.randn(n, c, *spatial, generator=gen, dtype=torch.float64).to(dtype)
    grid = (torch.rand(n, *out_spatial, rank, generator=gen, dtype=torch.float64) * 2.6 - 1.3).to(dtype)
    return x, grid


@pytest.mark.parametrize("rank,mode", [(2, m) for m in MODES_2D] + [(3, m) for m in MODES_3D])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_grid_sample_matches_cpu(rank, mode, padding, align, dtype):
    torch_npu_sim.reset_fallback_ops()
    x, grid = inputs(rank, dtype)
    want = run(x, grid, mode, padding, align)
    got = run(x.npu(), grid.npu(), mode, padding, align)
    for name, a, b in zip(("output", "grad_input", "grad_grid"), got, want):
        torch.testing.assert_close(a, b, rtol=TOL[dtype], atol=TOL[dtype], msg=lambda m: f"{name}: {m}")
    assert not torch_npu_sim.fallback_ops(), torch_npu_sim.fallback_ops()


@pytest.mark.parametrize("rank,mode", [(2, "bilinear"), (2, "bicubic"), (3, "bilinear"), (2, "nearest")])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_grid_sample_16_bit(rank, mode, dtype):
    x, grid = inputs(rank, dtype)
    want = run(x, grid, mode, "border", False, wide=torch.float32)
    got = run(x.npu(), grid.npu(), mode, "border", False)
    eps = torch.finfo(dtype).eps
    for a, b in zip(got, want):
        scale = max(b.abs().max().item(), 1.0)
        # the output and grad_input round once; grad_grid sums over channels in float, as CUDA
        torch.testing.assert_close(a.float(), b.float(), rtol=4 * eps, atol=4 * eps * scale)


def test_grid_sample_only_the_grid_requires_grad_and_empty_batches():
    x, grid = inputs(2, torch.float32)
    gc, gn = grid.clone().requires_grad_(), grid.npu().requires_grad_()
    F.grid_sample(x, gc, align_corners=False).sum().backward()
    F.grid_sample(x.npu(), gn, align_corners=False).sum().backward()
    torch.testing.assert_close(gn.grad.cpu(), gc.grad, rtol=1e-4, atol=1e-4)
    xe, ge = torch.randn(0, 3, 4, 4), torch.rand(0, 2, 2, 2)
    assert F.grid_sample(xe.npu(), ge.npu(), align_corners=False).shape == F.grid_sample(xe, ge, align_corners=False).shape
    # a NaN coordinate gives NaN in every mode and padding (CPU: NaN for bilinear with zeros padding, as compared
    # here; a clamped value or 0 for others, and a crash in border's backward); the other points are unaffected
    gnan = grid.clone()
    gnan[0, 0, 0, 0] = float("nan")
    torch.testing.assert_close(F.grid_sample(x.npu(), gnan.npu(), align_corners=False).cpu(),
                               F.grid_sample(x, gnan, align_corners=False), rtol=1e-5, atol=1e-5, equal_nan=True)
    for mode in MODES_2D:
        for padding in PADDINGS:
            xn, gn = x.npu().requires_grad_(), gnan.npu().requires_grad_()
            out = F.grid_sample(xn, gn, mode=mode, padding_mode=padding, align_corners=False)
            out.sum().backward()
            assert out[0, :, 0, 0].isnan().all() and not out[:, :, 1:].isnan().any()
            assert gn.grad[0, 0, 0].isnan().all() and not gn.grad[1].isnan().any()
            assert not xn.grad.isnan().any()


def test_grid_sample_errors_match_cpu():
    x, grid = inputs(2, torch.float32)
    x3, grid3 = inputs(3, torch.float32)
    cases = [
        lambda d: torch.grid_sampler_2d(x.to(d), grid[..., :1].to(d), 0, 0, False),     # grid's last dim
        lambda d: torch.grid_sampler_2d(x.to(d), grid[:1].to(d), 0, 0, False),          # batch sizes
        lambda d: torch.grid_sampler_3d(x3.to(d), grid3.to(d), 2, 0, False),            # bicubic in 3-D
        lambda d: torch.grid_sampler_2d(x.to(d), grid.double().to(d), 0, 0, False),     # dtypes differ
    ]
    for bad in cases:
        with pytest.raises(RuntimeError) as cpu_err:
            bad("cpu")
        with pytest.raises(RuntimeError) as npu_err:
            bad("npu")
        assert str(npu_err.value).splitlines()[0] == str(cpu_err.value).splitlines()[0]
