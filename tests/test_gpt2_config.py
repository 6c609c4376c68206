"""The GPT-2 124M recipe (`--config gpt2`) has the numbers of the GPT-2 reproduction."""

from tricycle.configs import CONFIGS, GPT2Config, get_config


def test_gpt2_config_is_the_reproductions_recipe():
    config = get_config("gpt2")
    assert CONFIGS["gpt2"] is GPT2Config
    assert (config.n_layers, config.n_heads, config.embedding_dim) == (12, 12, 768)
    assert (config.context_window, config.vocab_size, config.dropout) == (1024, 50304, 0.0)
    assert config.tokens_per_step == 524_288  # ~0.5M tokens: 16 x 1024 x 32 micro-batches
    assert (config.max_learning_rate, config.min_learning_rate) == (6e-4, 6e-5)
    assert (config.warmup_steps, config.steps) == (715, 19_073)
    assert (config.beta1, config.beta2, config.weight_decay, config.grad_clip) == (
        0.9, 0.95, 0.1, 1.0,
    )  # fmt: skip
    assert config.bias and config.tie_weights and config.device == "gpu"
