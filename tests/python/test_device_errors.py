"""No silent wrong results on one device: asynchronous errors are sticky until restart_device, events
report completion once what waited on them is done, module.to("npu") keeps Parameter identity."""
import pytest
import torch
import torch.nn as nn

from conftest import acknowledge_device_error
import torch_npu_sim  # noqa: F401

DEV = "npu"


def test_two_failed_kernels_both_stay_reported():
    x = torch.arange(5.0, device=DEV)
    i7, i9 = torch.tensor([7], device=DEV), torch.tensor([9], device=DEV)
    a = x.index_select(0, i7)
    b = x.index_select(0, i9)
    with pytest.raises(RuntimeError, match="index 7 is out of bounds"):
        torch.npu.synchronize()
    # the second failed kernel's output must not read back as if it had run
    with pytest.raises(RuntimeError, match="index 7 is out of bounds"):
        b.cpu()
    with pytest.raises(RuntimeError, match="sticky"):
        torch.npu.synchronize()
    with pytest.raises(RuntimeError):
        a.item()
    with pytest.raises(RuntimeError):
        (x + 1).cpu()  # later, correct work cannot be read back either: the device has failed
    acknowledge_device_error()
    assert torch.npu._device_error() is None
    torch.testing.assert_close((x + 1).cpu(), torch.arange(1.0, 6.0))


def test_sticky_error_reaches_events_and_streams():
    s = torch.npu.Stream()
    x, i5 = torch.arange(3.0, device=DEV), torch.tensor([5], device=DEV)
    torch.npu.synchronize()
    with torch.npu.stream(s):
        x.index_select(0, i5)
        e = s.record_event()
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
        e.synchronize()
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
        s.synchronize()
    # another stream of the same device, and its events, report it too
    t = torch.npu.Stream()
    with torch.npu.stream(t):
        y = torch.ones(2, device=DEV) * 2
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
        t.synchronize()
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
        y.cpu()
    acknowledge_device_error()
    assert y.cpu().tolist() == [2.0, 2.0]


@pytest.mark.skipif(torch.npu.device_count() < 2, reason="needs two simulated devices")
def test_sticky_error_stays_on_its_device():
    x, i5 = torch.arange(3.0, device="npu:0"), torch.tensor([5], device="npu:0")
    x.index_select(0, i5)
    with pytest.raises(RuntimeError):
        torch.npu.synchronize(0)
    assert torch.ones(3, device="npu:1").sum().item() == 3.0
    torch.npu.synchronize(1)
    acknowledge_device_error(0)


def test_event_query_after_a_waiting_stream_synchronized():
    s1, s2, s3 = torch.npu.Stream(), torch.npu.Stream(), torch.npu.Stream()
    x = torch.ones(64, device=DEV)
    s1.wait_stream(torch.npu.current_stream())  # x is filled on the default stream: s1's adds come after (as on CUDA)
    lagging = 0
    for i in range(2000):
        with torch.npu.stream(s1):
            x.add_(1)
            earlier = s1.record_event()
            e = s1.record_event()
        s2.wait_event(e)
        if i % 3 == 0:
            s3.wait_event(e)
            s3.synchronize()
        else:
            s2.synchronize()
        lagging += (not e.query()) + (not earlier.query())
    assert lagging == 0
    torch.npu.synchronize()
    assert x[0].item() == 2001.0


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 6)
        self.head = nn.Linear(6, 11, bias=False)
        self.head.weight = self.emb.weight  # tied, as GPT-2's wte and lm_head

    def forward(self, idx):
        return self.head(torch.tanh(self.emb(idx)))


def test_to_npu_keeps_parameter_identity_and_ties():
    torch.manual_seed(0)
    ref = Tied()
    m = Tied()
    m.load_state_dict(ref.state_dict())
    ids = {id(p) for p in m.parameters()}
    opt = torch.optim.SGD(m.parameters(), lr=0.5)  # built before the move: must keep working
    m.to(DEV)
    assert {id(p) for p in m.parameters()} == ids
    assert len(list(m.parameters())) == 1 and m.head.weight is m.emb.weight
    assert m.emb.weight.device.type == "npu"
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    idx = torch.tensor([[1, 2, 3], [4, 5, 10]])
    for _ in range(3):
        for model, o, dev in ((ref, ref_opt, "cpu"), (m, opt, DEV)):
            o.zero_grad()
            loss = model(idx.to(dev)).logsumexp(-1).mean()
            loss.backward()
            o.step()
    torch.testing.assert_close(m.emb.weight.detach().cpu(), ref.emb.weight.detach(), atol=1e-5, rtol=1e-5)
    m.to("cpu")
    assert {id(p) for p in m.parameters()} == ids


def test_param_data_assignment_crosses_devices():
    p = nn.Parameter(torch.zeros(3))
    p.data = torch.ones(3, device=DEV)
    assert p.device.type == "npu" and isinstance(p, nn.Parameter)
    assert p.cpu().tolist() == [1.0, 1.0, 1.0]
    assert torch._has_compatible_shallow_copy_type(torch.zeros(1), torch.zeros(1, device=DEV))
    assert torch._has_compatible_shallow_copy_type(torch.zeros(1, device=DEV), torch.zeros(1))
