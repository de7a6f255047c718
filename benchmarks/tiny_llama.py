"""A tiny HF-style LlamaForCausalLM (RMSNorm, rotary embeddings, GQA attention, SiLU-gated MLP) in plain PyTorch."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.eps)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, head_dim, theta=10000.0):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids = position_ids[:, None, :].float()
        with torch.autocast(device_type=x.device.type, enabled=False):  # cos/sin in float32, as HF does
            freqs = (inv_freq.float() @ position_ids.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos(), emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states, n_rep):
    batch, kv_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, kv_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, kv_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    def __init__(self, hidden, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def forward(self, hidden_states, cos, sin):
        b, t, _ = hidden_states.shape
        q = self.q_proj(hidden_states).view(b, t, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(b, t, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(b, t, -1, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        n_rep = self.heads // self.kv_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class LlamaMLP(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, hidden, heads, kv_heads, intermediate, eps):
        super().__init__()
        self.self_attn = LlamaAttention(hidden, heads, kv_heads)
        self.mlp = LlamaMLP(hidden, intermediate)
        self.input_layernorm = LlamaRMSNorm(hidden, eps)
        self.post_attention_layernorm = LlamaRMSNorm(hidden, eps)

    def forward(self, hidden_states, cos, sin):
        hidden_states = hidden_states + self.self_attn(self.input_layernorm(hidden_states), cos, sin)
        return hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))


class TinyLlama(nn.Module):
    """LlamaForCausalLM: forward(input_ids, labels=None) -> (logits, loss); loss is cross-entropy of
    logits[:, :-1] against labels[:, 1:] (in float32, as HF upcasts the logits)."""

    def __init__(self, vocab=256, hidden=128, layers=4, heads=4, kv_heads=2, intermediate=344, eps=1e-6,
                 theta=10000.0, init_std=0.02):
        super().__init__()
        self.vocab = vocab
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(hidden, heads, kv_heads, intermediate, eps) for _ in range(layers)])
        self.norm = LlamaRMSNorm(hidden, eps)
        self.rotary_emb = LlamaRotaryEmbedding(hidden // heads, theta)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        for m in self.modules():  # HF _init_weights: normal(0, initializer_range), norms stay at one
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=init_std)

    def forward(self, input_ids, labels=None):
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        hidden_states = self.embed_tokens(input_ids)
        cos, sin = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, cos, sin)
        logits = self.lm_head(self.norm(hidden_states))
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].float().reshape(-1, self.vocab), labels[:, 1:].reshape(-1))
        return logits, loss
