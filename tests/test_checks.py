"""Every public constructor and function refuses a bad argument by name.

Each entry of ``SIGNATURES`` is a public callable, arguments that make it work, and the kind
of each of its parameters; every parameter of the signature must have a kind (or be data,
listed in ``DATA``), so a new parameter without a check fails here. Each bad value of a kind
must raise the expected exception with a message naming the owner, the argument and the
value: ``Owner: name must be ..., got value``.
"""

import inspect
import math
import re

import numpy as np
import pytest

import tricycle
from tricycle import checks, factories, initialisers, ops, reduce, unary
from tricycle.activation import GLU, GeLU, LeakyReLU
from tricycle.attention import Attention, causal_attention
from tricycle.blocks import (
    GPT2TransformerBlock,
    LlamaAttention,
    LlamaTransformerBlock,
    MLPBlock,
    MultiHeadSelfAttention,
    SwiGLUBlock,
    llama_hidden_size,
)
from tricycle.configs import DebugConfig, GPTConfig, get_config
from tricycle.dataset import CausalLMDataset, Dataset, InfiniteBatchDataset
from tricycle.dropout_mask import AttentionDropout
from tricycle.gradcheck import gradcheck
from tricycle.layers import (
    Dense,
    Dropout,
    Embedding,
    LayerNorm,
    RMSNorm,
    Sequential,
    dropout,
    layer_norm,
    rms_norm,
)
from tricycle.loss import CrossEntropy
from tricycle.models import GPT, Llama, build_model
from tricycle.nn import activations, conv, more_losses
from tricycle.nn.recurrent import GRU, LSTM, RNN
from tricycle.nn.recurrent_cell_layers import GRUCell, LSTMCell, RNNCell
from tricycle.optimisers import SGD, Adam, AdamW, clip_grad_norm
from tricycle.parallel import distributed
from tricycle.parallel.distributed import DataParallel
from tricycle.precision import GradScaler, Precision
from tricycle.scheduler import CosineSchedule
from tricycle.tensor import Tensor, to_tensor
from tricycle.tokeniser import BPETokeniser, CharTokeniser, StreamDecoder, load_tokeniser
from tricycle_datasets import Corpus, TextFile, split_documents, split_text
from tricycle_datasets.codeparrot import CodeParrot
from tricycle_datasets.download import download
from tricycle_datasets.hellaswag import read_examples
from tricycle_datasets.prepare import prepare
from tricycle_datasets.python_code import PythonCode
from tricycle_datasets.shakespeare import Shakespeare
from tricycle_datasets.shards import TokenShards

NAN, INF = math.nan, math.inf
T, V = TypeError, ValueError

# ---------------------------------------------------------------------- kinds: (bad value, error)
COUNT = [(0, V), (-1, V), (2.5, T), (3.0, T), (NAN, T), ("3", T), (None, T), (True, T)]
COUNT_OR_NONE = [(0, V), (-1, V), (2.5, T), ("3", T), (True, T)]
NON_NEGATIVE_INT = [(-1, V), (2.5, T), (NAN, T), ("3", T), (None, T), (True, T)]
INTEGER = [(2.5, T), (NAN, T), ("3", T), (None, T), (True, T)]
INTEGER_OR_NONE = [(2.5, T), (NAN, T), ("3", T), (True, T)]
SEED = [(-1, V), (2.5, T), (NAN, T), ("3", T), (True, T)]
BOOLEAN = [(0, T), (1, T), ("yes", T), (None, T), (2.5, T)]
BOOLEAN_OR_NONE = [(0, T), (1, T), ("yes", T)]
POSITIVE = [(0, V), (-1, V), (NAN, V), (INF, V), ("3", T), (None, T), (True, T)]
POSITIVE_OR_NONE = [(0, V), (-1, V), (NAN, V), (INF, V), ("3", T), (True, T)]
ROPE_SCALING = [("linear", T), (2.0, T), ({"rope_type": "yarn", "factor": 2.0}, V),
                ({"rope_type": "linear", "factor": 0}, V), ({"rope_type": "linear"}, V),
                ({"rope_type": "linear", "factor": "2"}, V)]  # fmt: skip
ATTENTION_BIAS = [("qk", V), (True, V), (None, V)]
NON_NEGATIVE = [(-0.5, V), (NAN, V), (INF, V), ("3", T), (None, T), (True, T)]
PROBABILITY = [(-0.1, V), (1, V), (1.5, V), (NAN, V), (INF, V), ("0.1", T), (None, T), (True, T)]
FRACTION = [(0, V), (1, V), (NAN, V), ("0.1", T), (None, T), (True, T)]  # in (0, 1)
REAL = [(NAN, V), (INF, V), ("3", T), (None, T), (True, T)]
FUNCTION = [(None, T), (3, T), ("f", T)]
FUNCTION_OR_NONE = [(3, T), ("init", T), (True, T)]
TEXT = [(3, T), (None, T), (b"x", T)]
TEXT_OR_NONE = [(3, T), (True, T), (b"x", T)]
SIZES = COUNT[:2] + [(2.5, T), ("3", T), (None, T), (True, T), ((1, 2, 3), V), ((2, 0), V)]
SIZES_OR_NONE = [(0, V), (-1, V), (2.5, T), ("3", T), (True, T), ((1, 2, 3), V)]
PADDING = [(-1, V), (2.5, T), ("3", T), (None, T), (True, T), ((1, 2, 3), V), ((0, -1), V)]
ACTIVATION = [("gelu2", V), (3, T), (None, T)]
CONFIG = [(None, T), ({}, T), ("debug", T)]
GENERATOR_OR_NONE = [(3, T), ("rng", T), (np.random.RandomState(0), T)]
NONZERO = [(0, V), (0.0, V), (NAN, V), (INF, V), ("3", T), (None, T), (True, T)]
NONZERO_INT = [(0, V), (2.5, T), (2.0, T), ("3", T), (True, T)]  # or None
REDUCTION = [("batchmean", V), (None, V), (1, V)]
BETAS = [((1.0, 0.9), V), ((0.9, -0.1), V), ((NAN, 0.9), V), (("0.9", 0.9), T), ((0.9,), V),
         (0.9, T), (None, T)]  # fmt: skip
DATA = object()  # not checked here: data (tokens, inputs, paths, texts) has its own tests

TOKENS = np.arange(100) % 10
DEBUG = DebugConfig(embedding_dim=8, n_heads=2, n_layers=1, context_window=8, vocab_size=16)
LLAMA = DebugConfig(embedding_dim=8, n_heads=2, n_layers=1, context_window=8, vocab_size=16,
                    arch="llama")  # fmt: skip
MODEL = GPT(DEBUG)
CONFIG_FIELDS = dict(
    embedding_dim=COUNT, context_window=COUNT, vocab_size=COUNT, n_heads=COUNT, n_layers=COUNT,
    expansion_ratio=POSITIVE, activation_fn=[("gelu2", V), (3, V), (None, V)],
    dropout=PROBABILITY, tie_weights=BOOLEAN, bias=BOOLEAN, arch=[("gpt3", V), (None, V)],
    n_kv_heads=COUNT_OR_NONE, rope_theta=POSITIVE, ffn_multiple_of=COUNT, batch_size=COUNT,
    norm_eps=POSITIVE_OR_NONE, rope_scaling=ROPE_SCALING, attention_bias=ATTENTION_BIAS,
    head_dim=COUNT_OR_NONE, qk_norm=BOOLEAN,
    gradient_accumulation_steps=COUNT, max_learning_rate=NON_NEGATIVE,
    min_learning_rate=NON_NEGATIVE, warmup_steps=NON_NEGATIVE_INT, steps=COUNT,
    weight_decay=NON_NEGATIVE, decay_embeddings=BOOLEAN,
    beta1=PROBABILITY, beta2=PROBABILITY, eps=POSITIVE, grad_clip=NON_NEGATIVE,
    eval_interval=COUNT, eval_steps=COUNT, eval_protocol=[("some", V), (1, V)],
    device=[("tpu", V), (None, T), (-1, V)],
)  # fmt: skip


def _calling(fn, *args):
    """``fn(*args, **kwargs)``, with ``fn``'s signature (for a ``*args`` parameter)."""

    def call(**kwargs):
        return fn(*args, **kwargs)

    call.signature = inspect.signature(fn)
    return call


def _method(make, name: str, of: type):
    """``make().name(**kwargs)``, with the method's signature."""

    def call(**kwargs):
        result = getattr(make(), name)(**kwargs)
        return list(result) if inspect.isgenerator(result) else result

    call.signature = inspect.signature(getattr(of, name))
    return call


def _dataset():
    return CausalLMDataset(TOKENS, 10, 2, 4)


MODEL_OPTIONS = dict(
    max_new_tokens=NON_NEGATIVE_INT, temperature=NON_NEGATIVE, top_k=COUNT_OR_NONE,
    rng=GENERATOR_OR_NONE, use_cache=BOOLEAN, vocab_limit=COUNT_OR_NONE, tokens=DATA,
    top_p=[(0, V), (-0.1, V), (1.5, V), (NAN, V), ("0.5", T), (True, T)],  # in (0, 1]
    do_sample=BOOLEAN_OR_NONE, repetition_penalty=POSITIVE, no_repeat_ngram_size=NON_NEGATIVE_INT,
    min_p=[(-0.1, V), (1.5, V), (NAN, V), ("0.5", T), (True, T)],  # in [0, 1]
)  # fmt: skip
GENERATE_OPTIONS = dict(
    **MODEL_OPTIONS, eos_token_id=DATA, num_beams=COUNT, length_penalty=REAL,
    early_stopping=[("always", V), (1, V), (None, V)], num_return_sequences=COUNT,
    pad_token_id=[(-1, V), (2.5, T), ("3", T), (True, T)],
    min_new_tokens=[(-1, V), (2.5, T), ("3", T), (True, T)], min_length=NON_NEGATIVE_INT,
    attention_mask=DATA,  # (test_generate_options refuses bad masks by name)
)  # fmt: skip
INITIALISERS = dict(initialiser=FUNCTION_OR_NONE, projection_initialiser=FUNCTION_OR_NONE)
CONV = dict(
    in_channels=COUNT, out_channels=COUNT, kernel_size=SIZES, stride=SIZES, padding=PADDING,
    dilation=SIZES, groups=COUNT, bias=BOOLEAN, initialiser=FUNCTION_OR_NONE,
    padding_mode=[("zero", V), (3, V), (None, V)],
)  # fmt: skip
POOL = dict(kernel_size=SIZES, stride=SIZES_OR_NONE, padding=PADDING)
MAX_POOL = dict(**POOL, dilation=SIZES, return_indices=BOOLEAN, ceil_mode=BOOLEAN)
BATCH_NORM = dict(
    num_features=COUNT, eps=POSITIVE, affine=BOOLEAN, track_running_stats=BOOLEAN, bias=BOOLEAN,
    momentum=[(-0.1, V), (1.5, V), (NAN, V), ("0.1", T), (True, T)],
)  # fmt: skip
RECURRENT = dict(
    input_size=COUNT, hidden_size=COUNT, num_layers=COUNT, bias=BOOLEAN, batch_first=BOOLEAN,
    dropout=PROBABILITY, bidirectional=BOOLEAN,
)  # fmt: skip
NONLINEARITY = [("sigmoid", V), ("Tanh", V), (3, V), (None, V), (True, V)]
RECURRENT_CELL = dict(input_size=COUNT, hidden_size=COUNT, bias=BOOLEAN)
ADAM = dict(learning_rate=NON_NEGATIVE, betas=BETAS, eps=NON_NEGATIVE, weight_decay=NON_NEGATIVE)
VOCAB_BPE = [(255, V), (0, V), (2.5, T), ("3", T), (True, T)]  # >= 256: one id per byte

# (owner in messages, callable, arguments that work, {parameter: kind})
SIGNATURES = [
    # layers
    ("Dense", Dense, dict(from_size=3, to_size=2),
     dict(from_size=COUNT, to_size=COUNT, bias=BOOLEAN, initialiser=FUNCTION_OR_NONE,
          name=TEXT_OR_NONE)),
    ("Embedding", Embedding, dict(from_size=5, to_size=3),
     dict(from_size=COUNT, to_size=COUNT, initialiser=FUNCTION_OR_NONE,
          padding_idx=[(5, V), (-6, V), (2.5, T), ("0", T), (True, T)],
          max_norm=POSITIVE_OR_NONE, norm_type=REAL, scale_grad_by_freq=BOOLEAN, sparse=BOOLEAN,
          _weight=[(3, T), ("w", T)], _freeze=BOOLEAN)),
    ("LayerNorm", LayerNorm, dict(embedding_dim=4),
     dict(embedding_dim=COUNT, eps=POSITIVE, bias=BOOLEAN, normalized_shape=DATA,
          elementwise_affine=BOOLEAN)),
    ("RMSNorm", RMSNorm, dict(embedding_dim=4),
     dict(embedding_dim=COUNT, eps=POSITIVE, normalized_shape=DATA)),
    ("Dropout", Dropout, dict(probability=0.1),
     dict(probability=PROBABILITY, seed=SEED, inplace=BOOLEAN, p=PROBABILITY)),
    ("LeakyReLU", LeakyReLU, {}, dict(negative_slope=REAL, inplace=BOOLEAN)),
    ("GeLU", GeLU, {}, dict(approximate=[(0, V), (1, V), (None, V), ("exact", V), (2.5, V)])),
    ("GLU", GLU, dict(size=3), dict(size=COUNT, initialiser=FUNCTION_OR_NONE)),
    ("CrossEntropy", CrossEntropy, {}, dict(ignore_index=INTEGER_OR_NONE)),
    ("Attention", Attention, dict(n_heads=2), dict(n_heads=COUNT)),
    # blocks and models
    ("MultiHeadSelfAttention", MultiHeadSelfAttention,
     dict(embedding_dim=8, n_heads=2, context_window=4),
     dict(embedding_dim=COUNT, n_heads=COUNT, context_window=COUNT,
          residual_dropout_prob=PROBABILITY, attention_dropout_prob=PROBABILITY, bias=BOOLEAN,
          **INITIALISERS)),
    ("MLPBlock", MLPBlock, dict(embedding_dim=8),
     dict(embedding_dim=COUNT, expansion_ratio=POSITIVE, dropout_prob=PROBABILITY,
          activation=ACTIVATION, bias=BOOLEAN, **INITIALISERS)),
    ("GPT2TransformerBlock", GPT2TransformerBlock,
     dict(embedding_dim=8, n_heads=2, context_window=4),
     dict(embedding_dim=COUNT, n_heads=COUNT, context_window=COUNT, expansion_ratio=POSITIVE,
          dropout_prob=PROBABILITY, activation=ACTIVATION, bias=BOOLEAN, norm_eps=POSITIVE,
          **INITIALISERS)),
    ("LlamaAttention", LlamaAttention,
     dict(embedding_dim=8, n_heads=2, n_kv_heads=1, context_window=4),
     dict(embedding_dim=COUNT, n_heads=COUNT, n_kv_heads=COUNT, context_window=COUNT,
          rope_theta=POSITIVE, residual_dropout_prob=PROBABILITY,
          attention_dropout_prob=PROBABILITY, rope_scaling=ROPE_SCALING,
          attention_bias=ATTENTION_BIAS, head_dim=COUNT_OR_NONE, qk_norm=BOOLEAN,
          norm_eps=POSITIVE, **INITIALISERS)),
    ("SwiGLUBlock", SwiGLUBlock, dict(embedding_dim=8, hidden_dim=16),
     dict(embedding_dim=COUNT, hidden_dim=COUNT, dropout_prob=PROBABILITY, **INITIALISERS)),
    ("LlamaTransformerBlock", LlamaTransformerBlock,
     dict(embedding_dim=8, n_heads=2, n_kv_heads=1, context_window=4, hidden_dim=16),
     dict(embedding_dim=COUNT, n_heads=COUNT, n_kv_heads=COUNT, context_window=COUNT,
          hidden_dim=COUNT, rope_theta=POSITIVE, dropout_prob=PROBABILITY, norm_eps=POSITIVE,
          rope_scaling=ROPE_SCALING, attention_bias=ATTENTION_BIAS, head_dim=COUNT_OR_NONE,
          qk_norm=BOOLEAN, **INITIALISERS)),
    ("llama_hidden_size", llama_hidden_size, dict(embedding_dim=8),
     dict(embedding_dim=COUNT, expansion_ratio=POSITIVE, multiple_of=COUNT)),
    ("GPT", GPT, dict(config=DEBUG), dict(config=CONFIG, initialise=BOOLEAN)),
    ("Llama", Llama, dict(config=LLAMA), dict(config=CONFIG, initialise=BOOLEAN)),
    ("build_model", build_model, dict(config=DEBUG), dict(config=CONFIG)),
    ("GPT.generate", _method(lambda: MODEL, "generate", GPT),
     dict(tokens=[1, 2], max_new_tokens=2), GENERATE_OPTIONS),
    ("GPT.stream", _method(lambda: MODEL, "stream", GPT), dict(tokens=[[1, 2]], max_new_tokens=2),
     MODEL_OPTIONS),
    ("GPTConfig", GPTConfig, {}, CONFIG_FIELDS),
    ("get_config", get_config, dict(name="debug"),
     dict(name=[("nope", V), (3, V), (None, V)], overrides=DATA)),
    # convolutions, pooling, batch norm, recurrent layers
    ("Conv1d", conv.Conv1d, dict(in_channels=2, out_channels=4, kernel_size=3), CONV),
    ("Conv2d", conv.Conv2d, dict(in_channels=2, out_channels=4, kernel_size=3), CONV),
    ("MaxPool1d", conv.MaxPool1d, dict(kernel_size=2), MAX_POOL),
    ("MaxPool2d", conv.MaxPool2d, dict(kernel_size=2), MAX_POOL),
    ("AvgPool1d", conv.AvgPool1d, dict(kernel_size=2),
     dict(**POOL, ceil_mode=BOOLEAN, count_include_pad=BOOLEAN)),
    ("AvgPool2d", conv.AvgPool2d, dict(kernel_size=2),
     dict(**POOL, ceil_mode=BOOLEAN, count_include_pad=BOOLEAN, divisor_override=NONZERO_INT)),
    ("Flatten", conv.Flatten, {}, dict(start_dim=INTEGER, end_dim=INTEGER)),
    ("BatchNorm1d", conv.BatchNorm1d, dict(num_features=3), BATCH_NORM),
    ("BatchNorm2d", conv.BatchNorm2d, dict(num_features=3), BATCH_NORM),
    ("RNN", RNN, dict(input_size=3, hidden_size=4), dict(**RECURRENT, nonlinearity=NONLINEARITY)),
    ("GRU", GRU, dict(input_size=3, hidden_size=4), RECURRENT),
    ("LSTM", LSTM, dict(input_size=3, hidden_size=4),
     dict(**RECURRENT, proj_size=NON_NEGATIVE_INT)),
    ("RNNCell", RNNCell, dict(input_size=3, hidden_size=4),
     dict(**RECURRENT_CELL, nonlinearity=NONLINEARITY)),
    ("GRUCell", GRUCell, dict(input_size=3, hidden_size=4), RECURRENT_CELL),
    ("LSTMCell", LSTMCell, dict(input_size=3, hidden_size=4), RECURRENT_CELL),
    # tricycle.nn's further activations, losses and distances
    ("ELU", activations.ELU, {}, dict(alpha=REAL, inplace=BOOLEAN)),
    ("SELU", activations.SELU, {}, dict(inplace=BOOLEAN)),
    ("CELU", activations.CELU, {}, dict(alpha=NONZERO, inplace=BOOLEAN)),
    ("Softplus", activations.Softplus, {}, dict(beta=NONZERO, threshold=REAL)),
    ("Mish", activations.Mish, {}, dict(inplace=BOOLEAN)),
    ("Hardtanh", activations.Hardtanh, {}, dict(min_val=REAL, max_val=REAL, inplace=BOOLEAN)),
    ("ReLU6", activations.ReLU6, {}, dict(inplace=BOOLEAN)),
    ("Hardsigmoid", activations.Hardsigmoid, {}, dict(inplace=BOOLEAN)),
    ("Hardswish", activations.Hardswish, {}, dict(inplace=BOOLEAN)),
    ("Threshold", activations.Threshold, dict(threshold=0.0, value=0.0),
     dict(threshold=REAL, value=REAL, inplace=BOOLEAN)),
    ("PReLU", activations.PReLU, {}, dict(num_parameters=COUNT, init=REAL)),
    ("BCELoss", more_losses.BCELoss, {},
     dict(weight=[("heavy", T), (True, T), ({}, T)], reduction=REDUCTION)),
    ("MarginRankingLoss", more_losses.MarginRankingLoss, {},
     dict(margin=REAL, reduction=REDUCTION)),
    ("CosineEmbeddingLoss", more_losses.CosineEmbeddingLoss, {},
     dict(margin=[(2, V), (-1.5, V), (NAN, V), ("0", T), (None, T), (True, T)],
          reduction=REDUCTION)),
    ("CosineSimilarity", more_losses.CosineSimilarity, {}, dict(dim=INTEGER, eps=POSITIVE)),
    ("PairwiseDistance", more_losses.PairwiseDistance, {},
     dict(p=[(0.5, V), (INF, V), (NAN, V), ("2", T), (None, T), (True, T)], eps=NON_NEGATIVE,
          keepdim=BOOLEAN)),
    # optimisers, schedules, precision
    ("StochasticGradientDescent", SGD, dict(learning_rate=0.1),
     dict(learning_rate=NON_NEGATIVE, weight_decay=NON_NEGATIVE, momentum=NON_NEGATIVE,
          nesterov=BOOLEAN, dampening=REAL)),
    ("Adam", Adam, {}, ADAM),
    ("AdamW", AdamW, {}, dict(**ADAM, decay_filter=FUNCTION)),
    ("clip_grad_norm", clip_grad_norm, dict(parameters=[], max_norm=1.0),
     dict(parameters=DATA, max_norm=NON_NEGATIVE)),
    ("CosineSchedule", CosineSchedule,
     dict(max_learning_rate=1e-3, min_learning_rate=1e-4, total_steps=100, warmup_steps=10),
     dict(max_learning_rate=NON_NEGATIVE, min_learning_rate=NON_NEGATIVE, total_steps=COUNT,
          warmup_steps=NON_NEGATIVE_INT)),
    ("CosineSchedule", _method(lambda: CosineSchedule(1e-3, 1e-4, 100), "__call__",
                               CosineSchedule), dict(step=3), dict(step=NON_NEGATIVE_INT)),
    ("Precision", Precision, {},
     dict(mode=[("fp8", V), (16, T), (None, T)], loss_scaling=BOOLEAN_OR_NONE,
          tf32=BOOLEAN_OR_NONE, scaler_options=DATA)),
    ("GradScaler", GradScaler, {},
     dict(init_scale=POSITIVE, growth_factor=[(1, V), (0.5, V), (INF, V), ("2", T), (None, T)],
          backoff_factor=[(0, V), (1, V), (NAN, V), ("0.5", T), (None, T)],
          growth_interval=COUNT)),
    # datasets
    ("InfiniteBatchDataset", InfiniteBatchDataset,
     dict(inputs=np.zeros((10, 2)), outputs=np.zeros(10), batch_size=2),
     dict(inputs=DATA, outputs=DATA, batch_size=COUNT, seed=SEED)),
    ("CausalLMDataset", CausalLMDataset,
     dict(tokens=TOKENS, vocab_size=10, batch_size=2, context_window=4),
     dict(tokens=DATA, vocab_size=COUNT, batch_size=COUNT, context_window=COUNT, seed=SEED,
          rank=NON_NEGATIVE_INT, world_size=COUNT)),
    ("CausalLMDataset.batch", _method(_dataset, "batch", CausalLMDataset), {},
     dict(batch_size=COUNT_OR_NONE, drop_last=BOOLEAN)),
    ("CausalLMDataset.shuffle", _method(_dataset, "shuffle", CausalLMDataset), {},
     dict(seed=SEED)),
    ("CausalLMDataset.iterate_sequential", _method(_dataset, "iterate_sequential",
                                                   CausalLMDataset), {},
     dict(max_batches=COUNT_OR_NONE, split=[("some", V), (1, V)])),
    ("Dataset.batch", _method(lambda: Dataset(np.zeros(4), np.zeros(4)), "batch", Dataset),
     dict(batch_size=2), dict(batch_size=COUNT_OR_NONE, drop_last=BOOLEAN)),
    ("Dataset.to_gpu", _method(lambda: Dataset(np.zeros(4), np.zeros(4)), "to_gpu", Dataset),
     {}, dict(device=NON_NEGATIVE_INT)),
    # initialisers, factories, seeds, gradcheck, threads, distributed
    ("init_xavier", initialisers.init_xavier, dict(shape=(2, 3)),
     dict(shape=DATA, gain=NON_NEGATIVE, rng=DATA)),
    ("init_uniform", initialisers.init_uniform, dict(shape=(2, 3), bound=0.1),
     dict(shape=DATA, bound=NON_NEGATIVE, rng=DATA)),
    ("init_normal", initialisers.init_normal, dict(shape=(2, 3)),
     dict(shape=DATA, std=NON_NEGATIVE, mean=REAL, rng=DATA)),
    ("gpt2_residual_std", initialisers.gpt2_residual_std, dict(n_layers=2),
     dict(n_layers=COUNT, std=NON_NEGATIVE)),
    ("zeros", factories.zeros, {},
     dict(sizes=DATA, size=DATA, dtype=DATA, device=DATA, requires_grad=BOOLEAN)),
    ("linspace", factories.linspace, dict(start=0, end=1, steps=3),
     dict(start=REAL, end=REAL, steps=NON_NEGATIVE_INT, dtype=DATA, device=DATA,
          requires_grad=BOOLEAN)),
    ("arange", factories.arange, dict(start=0, end=3),
     dict(start=REAL, end=[(NAN, V), (INF, V), ("3", T), (True, T)], step=REAL, dtype=DATA,
          device=DATA, requires_grad=BOOLEAN)),
    ("eye", factories.eye, dict(n=2),
     dict(n=NON_NEGATIVE_INT, m=[(-1, V), (2.5, T), ("3", T), (True, T)], dtype=DATA,
          device=DATA, requires_grad=BOOLEAN)),
    ("tril", factories.tril, dict(x=np.ones((2, 2))), dict(x=DATA, diagonal=INTEGER)),
    ("manual_seed", tricycle.manual_seed, dict(seed=0),
     dict(seed=[(-1, V), (2.5, T), ("3", T), (None, T), (True, T)])),
    ("gradcheck", _calling(gradcheck, lambda x: x * 2, np.ones(2)), {},
     dict(fn=DATA, inputs=DATA, eps=POSITIVE, atol=NON_NEGATIVE, rtol=NON_NEGATIVE, wrt=DATA,
          seed=[(-1, V), (2.5, T), ("3", T), (None, T), (True, T)])),
    ("init", distributed.init, {}, dict(timeout=POSITIVE_OR_NONE, gpu=BOOLEAN)),
    ("DataParallel", DataParallel, dict(parameters=[], world=None),
     dict(parameters=DATA, world=DATA, bucket_bytes=COUNT_OR_NONE, first_bucket_bytes=COUNT,
          reduce_dtype=DATA, reorder=BOOLEAN, gradient_as_bucket_view=BOOLEAN_OR_NONE,
          reduce_alone=BOOLEAN)),
    # tokenisers
    ("BPETokeniser", BPETokeniser, dict(vocab_size=300),
     dict(vocab_size=VOCAB_BPE, pattern=TEXT, special_tokens=DATA)),
    ("CharTokeniser", CharTokeniser, {}, dict(chars=DATA)),
    ("StreamDecoder", StreamDecoder, dict(tokeniser=CharTokeniser("ab")),
     dict(tokeniser=[(None, T), ("ab", T), (3, T)])),
    ("BPETokeniser.load", BPETokeniser.load, dict(path="missing.json"),
     dict(path=DATA, trust_pattern=BOOLEAN)),
    ("load_tokeniser", load_tokeniser, dict(path="missing.json"),
     dict(path=DATA, trust_pattern=BOOLEAN)),
    # tricycle_datasets
    ("Corpus", Corpus, dict(name="c", train_text="ab", valid_text="ba", vocab_size=None,
                            char=True),
     dict(name=TEXT, train_text=DATA, valid_text=DATA, vocab_size=DATA, char=BOOLEAN)),
    ("TextFile", TextFile, dict(path="missing.txt", vocab_size=300),
     dict(path=DATA, vocab_size=VOCAB_BPE, char=BOOLEAN)),
    ("Shakespeare", Shakespeare, dict(data_dir="missing"),
     dict(vocab_size=VOCAB_BPE + [(None, T)], data_dir=DATA)),
    ("PythonCode", PythonCode, dict(root="missing"),
     dict(vocab_size=VOCAB_BPE, max_bytes=COUNT_OR_NONE, root=DATA, char=BOOLEAN)),
    ("CodeParrot", CodeParrot, dict(vocab_size=300),
     dict(vocab_size=VOCAB_BPE, max_bytes=COUNT, dataset=TEXT)),
    ("split_text", split_text, dict(text="a\nb"), dict(text=DATA, valid_fraction=FRACTION)),
    ("split_documents", split_documents, dict(documents=["a"] * 3),
     dict(documents=DATA, every=[(1, V), (0, V), (2.5, T), ("3", T), (None, T), (True, T)])),
    ("TokenShards", TokenShards, dict(directory="missing"),
     dict(directory=DATA, split=[("test", V), (None, V)], batch_size=COUNT,
          context_window=COUNT, seed=SEED, order=[("shuffled", V), (None, V)],
          rank=NON_NEGATIVE_INT, world_size=COUNT, vocab_size=COUNT_OR_NONE)),
    ("read_examples", read_examples, dict(path="missing.jsonl"),
     dict(path=DATA, limit=COUNT_OR_NONE)),
    ("download", download, dict(url="http://localhost:1/x", path="x", sha256="0" * 64),
     dict(url=DATA, path=DATA, sha256=DATA, timeout=POSITIVE)),
    ("prepare", prepare, dict(inputs=["missing"], out_dir="missing", vocab_size=300),
     dict(inputs=DATA, out_dir=DATA, vocab_size=[(256, V), (2.5, T), ("300", T), (True, T)],
          tokeniser_path=DATA, workers=COUNT, shard_tokens=COUNT,
          valid_fraction=[(-0.1, V), (1, V), (NAN, V), ("0.1", T), (None, T)],
          extensions=DATA, sample_bytes=COUNT, block_bytes=COUNT, progress=BOOLEAN,
          accelerate=BOOLEAN)),
]  # fmt: skip

# ops and tensors, on an input of shape (2, 3, 4)
X = tricycle.ones(2, 3, 4)
AXIS = [(3, V), (-4, V), (2.5, T), ("0", T), (None, T), (True, T)]
AXES = [(3, V), ((0, 0), V), ((0, 3), V), (2.5, T), ("0", T), (True, T), ([1.5], T)]
REDUCE = dict(x=DATA, axis=AXES, keepdims=BOOLEAN)
OPS = [
    ("reshape", _calling(ops.reshape, X), {},
     dict(x=DATA, shape=[(2.5, T), ("3", T), (None, T), (True, T), ([1.5], T)])),
    ("transpose", _calling(ops.transpose, X), {},
     dict(x=DATA, axes=[((0, 1, 3), V), ((0, 0, 1), V), ((0, 1), V), (2, T), ("012", T)])),
    ("swapaxes", _calling(ops.swapaxes, X), dict(a=0, b=1), dict(x=DATA, a=AXIS, b=AXIS)),
    ("expand_dims", _calling(ops.expand_dims, X), {},
     dict(x=DATA, axis=[(4, V), (-5, V), (2.5, T), (None, T), (True, T)])),
    ("squeeze", _calling(ops.squeeze, X), {}, dict(x=DATA, axis=AXES, dim=AXES)),
    ("split", _calling(ops.split, X), dict(indices_or_sections=2),
     dict(x=DATA, axis=AXIS, torch_words=DATA,
          indices_or_sections=[(0, V), (-1, V), (2.5, T), (None, T), ("2", T), ([1.5], T)])),
    ("repeat", _calling(ops.repeat, X), dict(repeats=2),
     dict(x=DATA, repeats=NON_NEGATIVE_INT, axis=[(3, V), (2.5, T), ("0", T), (True, T)])),
    ("concatenate", _calling(ops.concatenate, [X, X]), {},
     dict(tensors=DATA, axis=AXIS, dim=[a for a in AXIS if a[0] is not None])),
    ("stack", _calling(ops.stack, [X, X]), {},
     dict(tensors=DATA, axis=[(4, V), (-5, V), (2.5, T), (None, T), (True, T)],
          dim=[(4, V), (-5, V), (2.5, T), (True, T)])),
    ("masked_fill", _calling(ops.masked_fill, X, np.ones((2, 3, 4), bool)), dict(value=0.0),
     dict(x=DATA, mask=DATA, value=[("0", T), (None, T), ([1.0], T)])),
    ("sum", _calling(reduce.sum, X), {}, REDUCE),
    ("mean", _calling(reduce.mean, X), {}, REDUCE),
    ("max", _calling(reduce.max, X), {}, REDUCE),
    ("min", _calling(reduce.min, X), {}, REDUCE),
    ("var", _calling(reduce.var, X), {}, dict(**REDUCE, ddof=NON_NEGATIVE_INT)),
    ("clip", _calling(unary.clip, X), {},
     dict(x=DATA, low=[(NAN, V), (INF, V), ("0", T), (True, T)],
          high=[(NAN, V), (INF, V), ("0", T), (True, T)],
          min=[(NAN, V), (INF, V), ("0", T), (True, T)],
          max=[(NAN, V), (INF, V), ("0", T), (True, T)])),
    ("to_tensor", to_tensor, dict(data=[1.0]),
     dict(data=DATA, dtype=DATA, requires_grad=BOOLEAN_OR_NONE, is_batched=BOOLEAN,
          name=TEXT_OR_NONE)),
    ("backward", _method(lambda: (tricycle.ones(2, requires_grad=True) * 2).sum(), "backward",
                         Tensor), {},
     dict(gradient=DATA, retain_graph=BOOLEAN_OR_NONE, create_graph=BOOLEAN)),
    ("Tensor.to_gpu", _method(lambda: tricycle.ones(2), "to_gpu", Tensor), {},
     dict(device=NON_NEGATIVE_INT)),
    ("Dense.to_gpu", _method(lambda: Dense(2, 2), "to_gpu", Dense), {},
     dict(device=NON_NEGATIVE_INT)),
    ("Dense.load_state_dict", _method(lambda: Dense(2, 2), "load_state_dict", Dense),
     dict(state=Dense(2, 2).state_dict()), dict(state=DATA, strict=BOOLEAN)),
    ("layer_norm", _calling(layer_norm, X, tricycle.ones(4)), {},
     dict(x=DATA, gamma=DATA, beta=DATA, eps=POSITIVE)),
    ("rms_norm", _calling(rms_norm, X, tricycle.ones(4)), {}, dict(x=DATA, gamma=DATA,
                                                                    eps=POSITIVE)),
    ("dropout", _calling(dropout, X), dict(probability=0.1),
     dict(x=DATA, probability=PROBABILITY, rng=DATA)),
    ("causal_attention", _calling(causal_attention, tricycle.ones(1, 2, 6)), dict(n_heads=1),
     dict(qkv=DATA, n_heads=COUNT, dropout_prob=PROBABILITY, seed=NON_NEGATIVE_INT)),
    ("AttentionDropout", AttentionDropout, {},
     dict(probability=PROBABILITY, seed=NON_NEGATIVE_INT)),
]  # fmt: skip
SIGNATURES += OPS


def _signature(fn) -> inspect.Signature:
    return getattr(fn, "signature", None) or inspect.signature(fn)


def _parameters(fn) -> list[str]:
    return [name for name in _signature(fn).parameters if name != "self"]


def _cases():
    for owner, fn, good, kinds in SIGNATURES:
        for name, kind in kinds.items():
            if kind is DATA:
                continue
            for value, error in kind:
                yield pytest.param(owner, fn, good, name, value, error,
                                   id=f"{owner}-{name}-{_stable_repr(value)}")  # fmt: skip


def _stable_repr(value) -> str:
    """The value's repr without memory addresses, so that every pytest process (xdist's
    workers) collects the same test ids."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


@pytest.mark.parametrize("owner, fn, good, name, value, error", list(_cases()))
def test_a_bad_argument_is_refused_naming_owner_argument_and_value(
    owner, fn, good, name, value, error
):
    with pytest.raises(error) as caught:
        fn(**{**good, name: value})
    message = str(caught.value)
    assert message.startswith(f"{owner}: {name} must be "), message
    assert message.endswith(f"got {value!r}"), message


@pytest.mark.parametrize("owner, fn, good, kinds", SIGNATURES, ids=[s[0] for s in SIGNATURES])
def test_every_parameter_of_every_signature_has_a_kind(owner, fn, good, kinds):
    assert sorted(kinds) == sorted(_parameters(fn)), owner


# ---------------------------------------------------------------------- cross-argument rules
CROSS = [
    (lambda: MultiHeadSelfAttention(10, 3, 4), V, "MultiHeadSelfAttention: embedding_dim=10"),
    (lambda: LlamaAttention(8, 2, 3, 4), V, "LlamaAttention: "),
    (lambda: LlamaAttention(10, 4, 2, 4, head_dim=5), V,
     "LlamaAttention: RoPE needs an even head size, got 5"),
    (lambda: conv.Conv2d(3, 4, 3, groups=2), V, "Conv2d: in_channels=3 and out_channels=4"),
    (lambda: CosineSchedule(1e-4, 1e-3, 10), V, "CosineSchedule: need 0 <= min_learning_rate"),
    (lambda: CosineSchedule(1e-3, 1e-4, 10, 11), V, "CosineSchedule: need 0 <= warmup_steps"),
    (lambda: CausalLMDataset(TOKENS, 10, 2, 4, rank=2, world_size=2), V,
     "CausalLMDataset: rank must be below world_size (2), got 2"),
    (lambda: SGD(0.1, nesterov=True), V, "StochasticGradientDescent: nesterov needs momentum"),
    (lambda: Sequential(Dense(2, 2), 3), T, "Sequential: layers[1] must be callable, got 3"),
    (lambda: LSTM(3, 4, proj_size=4), V, "LSTM: proj_size has to be smaller than hidden_size"),
    (lambda: BPETokeniser(257, special_tokens=["<a>", "<b>"]), V,
     "BPETokeniser: vocab_size must be an integer >= 258"),
    (lambda: CharTokeniser(3), T, "CharTokeniser: chars must be"),
]  # fmt: skip


@pytest.mark.parametrize("make, error, message", CROSS)
def test_arguments_that_do_not_fit_together_are_refused_by_name(make, error, message):
    with pytest.raises(error) as caught:
        make()
    assert str(caught.value).startswith(message), str(caught.value)


# ---------------------------------------------------------------------- the checks themselves
def test_numpy_scalars_count_as_the_numbers_they_hold():
    assert checks.positive_int("f", "n", np.int64(3)) == 3
    assert checks.probability("f", "p", np.float32(0.5)) == 0.5
    assert checks.boolean("f", "b", np.bool_(True))
    assert checks.real("f", "x", 10**400) == 10**400  # a huge int is finite, not an overflow
    layer = Dense(np.int64(3), np.int32(2))
    assert layer.weights.shape == (3, 2)


def test_the_checks_return_what_they_were_given_and_name_intervals():
    value = np.float32(0.1)
    assert checks.non_negative("f", "x", value) is value  # not converted: numbers unchanged
    with pytest.raises(V, match=r"^f: x must be a finite number in \(0, 1\], got 0$"):
        checks.real("f", "x", 0, 0, 1, "(]")
    with pytest.raises(V, match=r"^f: x must be a finite number <= 1, got 2$"):
        checks.real("f", "x", 2, high=1)
    with pytest.raises(T, match=r"^f: x must be None or an integer >= 1, got 'a'$"):
        checks.optional(checks.positive_int)("f", "x", "a")
    assert checks.optional(checks.positive_int)("f", "x", None) is None
    with pytest.raises(V, match=r"^f: c must be one of 'a', True, got 1$"):
        checks.one_of(("a", True))("f", "c", 1)


def test_arguments_declares_checks_by_parameter_name_and_names_the_subclass():
    with pytest.raises(TypeError, match=r"has no parameters \['sise'\]"):

        @checks.arguments(sise=checks.positive_int)
        def f(size):
            return size

    @checks.arguments(size=checks.positive_int)
    def g(size, other=None):
        return size

    assert g(3) == 3 and g.checks == {"size": checks.positive_int}
    with pytest.raises(V, match=r"^g: size must be an integer >= 1, got 0$"):
        g(size=0)

    class Local:  # a class defined in a function: its methods are methods all the same
        @checks.arguments(n=checks.positive_int)
        def __init__(self, n):
            self.n = n

    with pytest.raises(V, match=r"^Local: n must be an integer >= 1, got 0$"):
        Local(0)
    with pytest.raises(V, match=r"^Conv1d: kernel_size must be"):
        conv.Conv1d(2, 2, 0)  # __init__ is defined on the shared base class
    with pytest.raises(V, match=r"^LSTM: num_layers must be"):
        LSTM(2, 2, num_layers=0)
