"""Standard models on npu with zero CPU fallbacks: an MLP, a small CNN (conv, batch norm, pooling,
dropout) and a GPT-style transformer (embedding, layer_norm, attention, gelu, cross_entropy), trained
with AdamW and SGD, then run for greedy and sampled decoding. Losses follow the CPU run."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_npu_sim


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 4))

    def forward(self, x):
        return self.net(x)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AvgPool2d(2),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.0), nn.Linear(16, 5))

    def forward(self, x):
        return self.head(self.features(x))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPTMini(nn.Module):
    def __init__(self, vocab=64, d=32, heads=4, layers=2, ctx=16):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        return self.head(self.ln(self.blocks(x)))


def data(kind):
    g = torch.Generator().manual_seed(1)
    if kind == "mlp":
        x = torch.randn(64, 32, generator=g)
        return x, (x[:, :4].argmax(1))
    if kind == "cnn":
        return torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 5, (8,), generator=g)
    seq = torch.randint(0, 64, (4, 17), generator=g)
    return seq[:, :-1], seq[:, 1:]


def loss_fn(kind, model, x, y):
    out = model(x)
    if kind == "gpt":
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return F.cross_entropy(out, y)


def train(kind, model, x, y, device, opt_name, steps=6):
    model = model.to(device)
    x, y = x.to(device), y.to(device)
    opt = (torch.optim.AdamW(model.parameters(), lr=3e-3) if opt_name == "adamw"
           else torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9))
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(kind, model, x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


@pytest.mark.parametrize("opt_name", ["adamw", "sgd"])
@pytest.mark.parametrize("kind,factory,tol", [("mlp", MLP, 1e-5), ("cnn", CNN, 1e-4), ("gpt", GPTMini, 1e-4)])
def test_training_matches_cpu_without_fallback(kind, factory, tol, opt_name):
    torch.manual_seed(0)
    model = factory()
    x, y = data(kind)
    _, cpu = train(kind, copy.deepcopy(model), x, y, "cpu", opt_name)
    torch_npu_sim.reset_fallback_ops()
    _, npu = train(kind, copy.deepcopy(model), x, y, "npu", opt_name)
    assert torch_npu_sim.fallback_ops() == {}, torch_npu_sim.fallback_ops()
    assert max(abs(a - b) for a, b in zip(cpu, npu)) <= tol * max(1.0, abs(cpu[0])), (cpu, npu)


def test_gpt_decoding_without_fallback():
    torch.manual_seed(0)
    model = GPTMini().npu().eval()
    prompt = torch.randint(0, 64, (2, 4)).npu()
    torch_npu_sim.reset_fallback_ops()
    with torch.no_grad():
        greedy = prompt
        for _ in range(8):
            nxt = model(greedy[:, -16:])[:, -1].argmax(-1, keepdim=True)
            greedy = torch.cat([greedy, nxt], 1)
        torch.npu.manual_seed(42)
        sampled = prompt
        for _ in range(8):
            probs = torch.softmax(model(sampled[:, -16:])[:, -1] / 0.8, -1)
            sampled = torch.cat([sampled, torch.multinomial(probs, 1)], 1)
    assert torch_npu_sim.fallback_ops() == {}, torch_npu_sim.fallback_ops()
    cpu_model = copy.deepcopy(model).cpu()
    with torch.no_grad():
        ref = prompt.cpu()
        for _ in range(8):
            ref = torch.cat([ref, cpu_model(ref[:, -16:])[:, -1].argmax(-1, keepdim=True)], 1)
    assert torch.equal(greedy.cpu(), ref)
    assert sampled.shape == (2, 12) and int(sampled.max()) < 64 and int(sampled.min()) >= 0
