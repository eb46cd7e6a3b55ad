"""An fp32 reference perplexity for Gemma 3 270M: the forward pass in torch on the GGUF's weights
dequantized by the `gguf` package, scored as llama-perplexity does (n_ctx 512, first token BOS,
second half of each window). A MODE may simulate ggml's 8-bit activation quantization (Q8_0 per
32 before Q5_0/Q8_0 weights, Q8_K per 256 before K-quants) for some matmul classes: q, k, v
(attention inputs), o (attn_output), g (ffn gate/up), d (ffn_down), e (output); "ref" none,
"kv16" rounds K and V to f16. Not run by CI (needs torch); how the Gemma perplexity gap was
measured (issue 23). Shapes are the 270M's.

Usage: strata tokenize -m M.gguf -f TEXT --ids > ids.json
       python3 scripts/gemma3_reference_ppl.py M.gguf ids.json N_CHUNKS ref qkvogde d ...
"""
import json, math, sys, time
import numpy as np, torch, gguf

torch.set_num_threads(2)
path, ids_path, n_chunks = sys.argv[1], sys.argv[2], int(sys.argv[3])
modes = sys.argv[4:]
r = gguf.GGUFReader(path)
W, T = {}, {}
for t in r.tensors:
    shape = [int(d) for d in reversed(t.shape)]
    W[t.name] = torch.from_numpy(np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(shape).copy())
    T[t.name] = t.tensor_type.name
n_layer, n_embd, n_head, n_kv, hd = 18, 640, 4, 1, 256
eps = 1e-6
ids = json.load(open(ids_path))
n_ctx = 512


def fp16(x):
    return x.to(torch.float16).to(torch.float32)


def q8_0(x):  # per 32, d = amax/127 stored as f16
    s = x.reshape(-1, 32)
    amax = s.abs().amax(dim=1, keepdim=True)
    d = amax / 127
    inv = torch.where(d > 0, 1 / d, torch.zeros_like(d))
    q = torch.round(s * inv).clamp(-127, 127)  # ggml roundf: half away from zero; torch.round: half even (negligible)
    return (q * fp16(d)).reshape(x.shape)


def q8_k(x):  # per 256, iscale = -127/max (signed max), d = 1/iscale f32
    s = x.reshape(-1, 256)
    idx = s.abs().argmax(dim=1, keepdim=True)
    mx = torch.gather(s, 1, idx)
    iscale = torch.where(mx != 0, -127 / mx, torch.zeros_like(mx))
    q = torch.round(s * iscale).clamp(-127, 127)
    d = torch.where(iscale != 0, 1 / iscale, torch.zeros_like(iscale))
    return (q * d).reshape(x.shape)


def mm(name, x, cls, mode):
    w = W[name]
    if cls in mode:
        t = T[name]
        x = q8_k(x) if t in ("Q4_K", "Q5_K", "Q6_K", "Q2_K", "Q3_K") else q8_0(x) if t in ("Q5_0", "Q8_0", "Q4_0") else x
    return x @ w.T


def rms(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rope(x, pos, base):  # x [n, heads, hd], NEOX
    half = hd // 2
    inv = 1.0 / (base ** (torch.arange(0, half, dtype=torch.float32) * 2 / hd))
    ang = pos[:, None].float() * inv[None, :]
    c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def forward(tok, mode):
    n = len(tok)
    pos = torch.arange(n)
    x = W["token_embd.weight"][torch.tensor(tok)] * math.sqrt(n_embd)
    mask = torch.full((n, n), float("-inf")).triu(1)
    for il in range(n_layer):
        b = f"blk.{il}."
        swa = il % 6 < 5
        h = rms(x, W[b + "attn_norm.weight"])
        q = mm(b + "attn_q.weight", h, "q", mode).reshape(n, n_head, hd)
        k = mm(b + "attn_k.weight", h, "k", mode).reshape(n, n_kv, hd)
        v = mm(b + "attn_v.weight", h, "v", mode).reshape(n, n_kv, hd)
        q = rms(q, W[b + "attn_q_norm.weight"])
        k = rms(k, W[b + "attn_k_norm.weight"])
        base = 10000.0 if swa else 1e6
        q, k = rope(q, pos, base), rope(k, pos, base)
        if "kv16" in mode:
            k, v = fp16(k), fp16(v)
        att = torch.einsum("qhd,khd->hqk", q, k.expand(n, n_head, hd)) / math.sqrt(hd) + mask
        o = torch.einsum("hqk,khd->qhd", att.softmax(-1), v.expand(n, n_head, hd)).reshape(n, n_head * hd)
        o = mm(b + "attn_output.weight", o, "o", mode)
        x = x + rms(o, W[b + "post_attention_norm.weight"])
        h = rms(x, W[b + "ffn_norm.weight"])
        g = torch.nn.functional.gelu(mm(b + "ffn_gate.weight", h, "g", mode), approximate="tanh") * mm(b + "ffn_up.weight", h, "g", mode)
        d = mm(b + "ffn_down.weight", g, "d", mode)
        x = x + rms(d, W[b + "post_ffw_norm.weight"])
    h = rms(x[n // 2:], W["output_norm.weight"])
    return mm("token_embd.weight", h, "e", mode)


with torch.no_grad():
    for mode in modes:
        t0 = time.time()
        nll, cnt = 0.0, 0
        for c in range(n_chunks):
            tok = list(ids[c * n_ctx:(c + 1) * n_ctx])
            tok[0] = 2  # BOS
            logits = forward(tok, mode)  # rows for positions n/2 .. n-1
            lp = torch.log_softmax(logits[:-1].double(), -1)
            tgt = torch.tensor(tok[n_ctx // 2 + 1:])
            nll -= lp[torch.arange(len(tgt)), tgt].sum().item()
            cnt += len(tgt)
        print(f"{mode:>12}: PPL {math.exp(nll / cnt):.4f} ({time.time() - t0:.0f}s)", flush=True)
