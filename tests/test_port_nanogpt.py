"""nanoGPT's ``model.py`` ported to ``tricycle.nn``, checked against the original in PyTorch.

The port below is Karpathy's file (``tests/torch_nanogpt.py``, the original as written) with
``torch`` renamed ``tricycle``; every other line that differs says why on the line, after
``# tricycle:``. What stays different is the parameters' names (``weights``, torch's
``weight``) and a Linear's layout ((in, out), the transpose of torch's, so the tied head is
``F.linear`` on the embedding table): changing either would break every saved tricycle
checkpoint. The tests build both models, move torch's weights across with
``nn.from_torch``, and compare in float64: the logits and the loss, every parameter's gradient,
the parameters after two AdamW steps of ``configure_optimizers``' groups, the manual-attention
path, ``crop_block_size``, ``generate`` (greedy: the same ids; sampled: valid ids) and the
counts of ``get_num_params`` and ``estimate_mfu``.
"""
# ruff: noqa: E501, A002, UP031
# fmt: off

import inspect
import math
from dataclasses import dataclass

import numpy as np  # the tests below
import pytest  # the tests below

import tricycle  # tricycle: the one rename, torch -> tricycle (tricycle.ones, tricycle.arange, ...)
import tricycle.nn as nn
import tricycle.optim  # tricycle: import torch loads torch.optim, import tricycle loads nothing
from tricycle.nn import functional as F


class LayerNorm(nn.Module):
    """ LayerNorm but with an optional bias. PyTorch doesn't support simply bias=False """

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(tricycle.ones(ndim))
        self.bias = nn.Parameter(tricycle.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

class CausalSelfAttention(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # key, query, value projections for all heads, but in a batch
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        # output projection
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        # regularization
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        # flash attention make GPU go brrrrr but support is only in PyTorch >= 2.0
        self.flash = hasattr(tricycle.nn.functional, 'scaled_dot_product_attention')
        if not self.flash:
            print("WARNING: using slow attention. Flash Attention requires PyTorch >= 2.0")
            # causal mask to ensure that attention is only applied to the left in the input sequence
            self.register_buffer("bias", tricycle.tril(tricycle.ones(config.block_size, config.block_size))
                                        .view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size() # batch size, sequence length, embedding dimensionality (n_embd)

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        q, k, v  = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)

        # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        if self.flash:
            # efficient attention using Flash Attention CUDA kernels
            y = tricycle.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True)
        else:
            # manual implementation of attention
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C) # re-assemble all head outputs side by side

        # output projection
        y = self.resid_dropout(self.c_proj(y))
        return y

class MLP(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.c_fc    = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu    = nn.GELU()
        self.c_proj  = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        x = self.c_fc(x)
        x = self.gelu(x)
        x = self.c_proj(x)
        x = self.dropout(x)
        return x

class Block(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x

@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304 # GPT-2 vocab_size of 50257, padded up to nearest multiple of 64 for efficiency
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True # True: bias in Linears and LayerNorms, like GPT-2. False: a bit better and faster

class GPT(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.vocab_size is not None
        assert config.block_size is not None
        self.config = config

        self.transformer = nn.ModuleDict(dict(
            wte = nn.Embedding(config.vocab_size, config.n_embd),
            wpe = nn.Embedding(config.block_size, config.n_embd),
            drop = nn.Dropout(config.dropout),
            h = nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f = LayerNorm(config.n_embd, bias=config.bias),
        ))
        # tricycle: no lm_head Linear: tricycle's holds (in, out) weights, the transpose of wte's (V, E) (changing the layout would break saved checkpoints)
        # with weight tying when using torch.compile() some warnings get generated:
        # "UserWarning: functional_call was passed multiple values for tied weights.
        # This behavior is deprecated and will be an error in future versions"
        # not 100% sure what this is, so far seems to be harmless. TODO investigate
        # tricycle: the tied head is F.linear on wte's table (torch's layout), in forward # https://paperswithcode.com/method/weight-tying

        # init all weights
        self.apply(self._init_weights)
        # apply special scaled init to the residual projections, per GPT-2 paper
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weights'):  # tricycle: a Linear's tensor is named weights (renaming it would break saved checkpoints)
                tricycle.nn.init.normal_(p, mean=0.0, std=0.02/math.sqrt(2 * config.n_layer))

        # report number of parameters
        print("number of parameters: %.2fM" % (self.get_num_params()/1e6,))

    def get_num_params(self, non_embedding=True):
        """
        Return the number of parameters in the model.
        For non-embedding count (default), the position embeddings get subtracted.
        The token embeddings would too, except due to the parameter sharing these
        params are actually used as weights in the final layer, so we include them.
        """
        n_params = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n_params -= self.transformer.wpe.weights.numel()  # tricycle: weights, not weight
        return n_params

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            tricycle.nn.init.normal_(module.weights, mean=0.0, std=0.02)  # tricycle: weights, not weight
            if module.bias is not None:
                tricycle.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            tricycle.nn.init.normal_(module.weights, mean=0.0, std=0.02)  # tricycle: weights, not weight

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.config.block_size, f"Cannot forward sequence of length {t}, block size is only {self.config.block_size}"
        pos = tricycle.arange(0, t, dtype=tricycle.long, device=device) # shape (t)

        # forward the GPT model itself
        tok_emb = self.transformer.wte(idx) # token embeddings of shape (b, t, n_embd)
        pos_emb = self.transformer.wpe(pos) # position embeddings of shape (t, n_embd)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)

        if targets is not None:
            # if we are given some desired targets also calculate the loss
            logits = F.linear(x, self.transformer.wte.weights)  # tricycle: the tied head (see __init__)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            # inference-time mini-optimization: only forward the lm_head on the very last position
            logits = F.linear(x[:, [-1], :], self.transformer.wte.weights)  # tricycle: the tied head # note: using list [-1] to preserve the time dim
            loss = None

        return logits, loss

    def crop_block_size(self, block_size):
        # model surgery to decrease the block size if necessary
        # e.g. we may load the GPT2 pretrained model checkpoint (block size 1024)
        # but want to use a smaller block size for some smaller, simpler model
        assert block_size <= self.config.block_size
        self.config.block_size = block_size
        self.transformer.wpe.weights = nn.Parameter(self.transformer.wpe.weights[:block_size])  # tricycle: weights, not weight
        for block in self.transformer.h:
            if hasattr(block.attn, 'bias'):
                block.attn.bias = block.attn.bias[:,:,:block_size,:block_size]

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        # start with all of the candidate parameters
        param_dict = {pn: p for pn, p in self.named_parameters()}
        # filter out those that do not require grad
        param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
        # create optim groups. Any parameters that is 2D will be weight decayed, otherwise no.
        # i.e. all weight tensors in matmuls + embeddings decay, all biases and layernorms don't.
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {'params': decay_params, 'weight_decay': weight_decay},
            {'params': nodecay_params, 'weight_decay': 0.0}
        ]
        num_decay_params = sum(p.numel() for p in decay_params)
        num_nodecay_params = sum(p.numel() for p in nodecay_params)
        print(f"num decayed parameter tensors: {len(decay_params)}, with {num_decay_params:,} parameters")
        print(f"num non-decayed parameter tensors: {len(nodecay_params)}, with {num_nodecay_params:,} parameters")
        # Create AdamW optimizer and use the fused version if it is available
        fused_available = 'fused' in inspect.signature(tricycle.optim.AdamW).parameters
        use_fused = fused_available and device_type == 'cuda'
        extra_args = dict(fused=True) if use_fused else dict()
        optimizer = tricycle.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
        print(f"using fused AdamW: {use_fused}")

        return optimizer

    def estimate_mfu(self, fwdbwd_per_iter, dt):
        """ estimate model flops utilization (MFU) in units of A100 bfloat16 peak FLOPS """
        # first estimate the number of flops we do per iteration.
        # see PaLM paper Appendix B as ref: https://arxiv.org/abs/2204.02311
        N = self.get_num_params()
        cfg = self.config
        L, H, Q, T = cfg.n_layer, cfg.n_head, cfg.n_embd//cfg.n_head, cfg.block_size
        flops_per_token = 6*N + 12*L*H*Q*T
        flops_per_fwdbwd = flops_per_token * T
        flops_per_iter = flops_per_fwdbwd * fwdbwd_per_iter
        # express our flops throughput as ratio of A100 bfloat16 peak flops
        flops_achieved = flops_per_iter * (1.0/dt) # per second
        flops_promised = 312e12 # A100 GPU bfloat16 peak flops is 312 TFLOPS
        mfu = flops_achieved / flops_promised
        return mfu

    @tricycle.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        """
        Take a conditioning sequence of indices idx (LongTensor of shape (b,t)) and complete
        the sequence max_new_tokens times, feeding the predictions back into the model each time.
        Most likely you'll want to make sure to be in model.eval() mode of operation for this.
        """
        for _ in range(max_new_tokens):
            # if the sequence context is growing too long we must crop it at block_size
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
            # forward the model to get the logits for the index in the sequence
            logits, _ = self(idx_cond)
            # pluck the logits at the final step and scale by desired temperature
            logits = logits[:, -1, :] / temperature
            # optionally crop the logits to only the top k options
            if top_k is not None:
                v, _ = tricycle.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float('Inf')
            # apply softmax to convert logits to (normalized) probabilities
            probs = F.softmax(logits, dim=-1)
            # sample from the distribution
            idx_next = tricycle.multinomial(probs, num_samples=1)
            # append sampled index to the running sequence and continue
            idx = tricycle.cat((idx, idx_next), dim=1)

        return idx

# fmt: on

# ====================================================================== the tests
torch = pytest.importorskip("torch")
reference = pytest.importorskip("torch_nanogpt")  # the original, in PyTorch

SIZES = dict(block_size=16, vocab_size=64, n_layer=2, n_head=4, n_embd=32)
B, T = 2, 16
RTOL, ATOL = 1e-9, 1e-12


def twins(bias: bool = True, dropout: float = 0.0, flash: bool = True):
    """nanoGPT in torch and its port, in float64, with torch's weights in both."""
    torch.manual_seed(0)
    theirs = reference.GPT(reference.GPTConfig(**SIZES, bias=bias, dropout=dropout)).double()
    ours = GPT(GPTConfig(**SIZES, bias=bias, dropout=dropout)).to(np.float64)
    if not flash:  # the manual attention (PyTorch < 2.0): the causal mask as a buffer
        for model, lib in ((theirs, torch), (ours, tricycle)):
            for block in model.transformer["h"]:
                block.attn.flash = False
                mask = lib.tril(lib.ones(SIZES["block_size"], SIZES["block_size"]))
                block.attn.register_buffer("bias", mask.view(1, 1, T, T))
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])  # lm_head.weight: wte's alias
    return theirs, ours


def batch(seed: int = 0, length: int = T):
    """Token ids (B, length) and targets, a few of them -1 (ignored), as tricycle and torch."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, SIZES["vocab_size"], (B, length))
    targets = rng.integers(0, SIZES["vocab_size"], (B, length))
    targets[0, :3] = -1
    as_tricycle = [tricycle.to_tensor(a, dtype=np.int64) for a in (ids, targets)]
    return as_tricycle, [torch.from_numpy(a) for a in (ids, targets)]


def close(ours, theirs, rtol=RTOL, atol=ATOL, what=""):
    ours = ours.numpy() if hasattr(ours, "numpy") and not isinstance(ours, np.ndarray) else ours
    np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=rtol, atol=atol, err_msg=what)


def torch_layout_grads(model) -> dict:
    """Every parameter's gradient under its torch name, in torch's layout (through to_torch)."""
    arrays = [(p, p.array) for p in model.parameters()]
    for p, _ in arrays:
        p.array = p.grad.array
    try:
        return nn.to_torch(model)
    finally:
        for p, array in arrays:
            p.array = array


@pytest.mark.parametrize("bias", [True, False])
def test_logits_loss_and_gradients_match_torch(bias):
    theirs, ours = twins(bias)
    (ids, targets), (tids, ttargets) = batch()
    logits, loss = ours(ids, targets)
    tlogits, tloss = theirs(tids, ttargets)
    close(logits, tlogits, what="logits")
    close(loss, tloss, what="loss")
    loss.backward()
    tloss.backward()
    grads, expected = torch_layout_grads(ours), dict(theirs.named_parameters())
    assert sorted(grads) == sorted(expected)  # lm_head.weight is transformer.wte.weight in both
    for name, grad in grads.items():
        close(grad, expected[name].grad, what=name)
    inference, _ = ours(ids)  # the last position alone, (B, 1, V)
    assert inference.shape == (B, 1, SIZES["vocab_size"])
    close(inference, theirs(tids)[0], what="logits[:, [-1]]")


def test_manual_attention_and_crop_block_size_match_torch():
    theirs, ours = twins(flash=False)
    (ids, targets), (tids, ttargets) = batch()
    logits, loss = ours(ids, targets)
    close(logits, theirs(tids, ttargets)[0], what="manual attention")
    for model in (theirs, ours):
        model.crop_block_size(8)
    wpe = ours.transformer.wpe.weights  # a new leaf, float64 as the table it was cut from
    assert isinstance(wpe, nn.Parameter) and wpe.dtype == np.float64 and wpe.args is None
    assert wpe.shape == (8, SIZES["n_embd"]) and "from_size=8," in repr(ours.transformer.wpe)
    assert ours.transformer["h"][0].attn.bias.shape == (1, 1, 8, 8)
    (ids, targets), (tids, ttargets) = batch(1, length=8)
    logits, loss = ours(ids, targets)
    tlogits, tloss = theirs(tids, ttargets)
    close(logits, tlogits, what="cropped logits")
    loss.backward()
    tloss.backward()
    close(ours.transformer["wpe"].weights.grad, theirs.transformer.wpe.weight.grad, what="wpe")
    with pytest.raises(AssertionError, match="block size is only 8"):
        ours(batch(2, length=9)[0][0])


def test_two_adamw_steps_of_configure_optimizers_match_torch():
    theirs, ours = twins()
    settings = dict(weight_decay=0.1, learning_rate=1e-2, betas=(0.9, 0.95), device_type="cpu")
    optimizer, toptimizer = (
        ours.configure_optimizers(**settings),
        theirs.configure_optimizers(**settings),
    )
    sizes = [[p.numel() for p in g["params"]] for g in optimizer.param_groups]
    assert sizes == [[p.numel() for p in g["params"]] for g in toptimizer.param_groups]
    for step in range(2):
        (ids, targets), (tids, ttargets) = batch(step)
        for model, opt, args in (
            (ours, optimizer, (ids, targets)),
            (theirs, toptimizer, (tids, ttargets)),
        ):
            opt.zero_grad(set_to_none=True)
            _, loss = model(*args)
            loss.backward()
            opt.step()
    state, expected = nn.to_torch(ours), theirs.state_dict()
    for name, value in state.items():
        np.testing.assert_allclose(
            value, expected[name].numpy(), rtol=1e-8, atol=1e-10, err_msg=name
        )


def test_generate_greedy_matches_torch_and_samples_valid_ids():
    theirs, ours = twins()
    theirs.eval()
    ours.eval()
    (ids, _), (tids, _) = batch(length=12)
    steps = 8  # past block_size: the context is cropped to the last 16 ids
    greedy = ours.generate(ids, steps, top_k=1)  # one id kept: argmax, as torch's
    np.testing.assert_array_equal(greedy.numpy(), theirs.generate(tids, steps, top_k=1).numpy())
    tricycle.manual_seed(0)
    sampled = ours.generate(ids, steps, temperature=0.8, top_k=5)
    assert sampled.shape == (B, 12 + steps) and sampled.dtype == np.int64
    np.testing.assert_array_equal(sampled.numpy()[:, :12], ids.numpy())
    for t in range(12, 12 + steps):  # each id among the 5 likeliest after its context
        logits, _ = ours(sampled[:, max(0, t - T) : t])
        top5 = np.argsort(-logits.numpy()[:, -1], axis=-1)[:, :5]
        assert all(sampled.numpy()[b, t] in top5[b] for b in range(B))
    tricycle.manual_seed(0)
    np.testing.assert_array_equal(
        ours.generate(ids, steps, temperature=0.8, top_k=5).numpy(), sampled.numpy()
    )


def test_counts_match_torch():
    theirs, ours = twins()
    assert all(isinstance(p, nn.Parameter) for p in ours.parameters())  # LayerNorm's too
    assert ours.get_num_params() == theirs.get_num_params()
    assert ours.get_num_params(non_embedding=False) == theirs.get_num_params(non_embedding=False)
    assert ours.estimate_mfu(4, 0.5) == theirs.estimate_mfu(4, 0.5)


def test_dropout_in_training_is_active_and_off_in_eval():
    theirs, ours = twins(dropout=0.2)
    (ids, targets), (tids, ttargets) = batch()
    ours.eval()
    theirs.eval()
    close(ours(ids, targets)[1], theirs(tids, ttargets)[1], what="eval")
    ours.train()
    tricycle.manual_seed(0)
    first = ours(ids, targets)[1]
    assert np.isfinite(first.item()) and first.item() != ours.eval()(ids, targets)[1].item()
