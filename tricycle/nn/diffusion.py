"""Denoising diffusion probabilistic models (DDPM; Ho, Jain and Abbeel, 2020) and DDIM
sampling (Song, Meng and Ermon, 2021).

The forward process adds Gaussian noise to data x_0 in T small steps with variances
beta_1 ... beta_T. With alpha_t = 1 - beta_t and alpha_bar_t = alpha_1 ... alpha_t, any step
is one draw away from the data::

    q(x_t | x_0) = N(sqrt(alpha_bar_t) x_0, (1 - alpha_bar_t) I)
    x_t = sqrt(alpha_bar_t) x_0 + sqrt(1 - alpha_bar_t) eps,   eps ~ N(0, I)

A network eps_theta(x_t, t) learns to predict the noise eps that made x_t, by the simple
loss ||eps - eps_theta(x_t, t)||^2 averaged over data, uniform t and noise. Sampling runs
the process backwards from pure noise x_T ~ N(0, I):

- ancestral (DDPM): every step t -> t - 1 draws from the posterior q(x_{t-1} | x_t, x_0)
  with x_0 estimated from the predicted noise: T network calls;
- DDIM: a deterministic (eta = 0) or partly random map between any decreasing sub-sequence
  of the steps, with the same trained network: e.g. 50 calls instead of 1000.

Steps are indexed from 0 here: array index i holds the paper's step t = i + 1, so
``alpha_bars[0] = alpha_1`` and ``alpha_bars[T - 1]`` is the last, noisiest step. The
schedules are float64 numpy arrays; the arithmetic on a batch happens in its own dtype and
on its own device. Random draws come from tricycle's generator (``tricycle.manual_seed``).
"""

import math

import numpy as np

from tricycle import backend, checks, random
from tricycle.loss import MeanSquaredError
from tricycle.tensor import Tensor, no_grad, to_tensor

__all__ = [
    "NoiseSchedule",
    "ancestral_sample",
    "cosine_betas",
    "ddim_sample",
    "ddim_timesteps",
    "ddpm_loss",
    "draw_noise",
    "draw_timesteps",
    "linear_betas",
    "q_sample",
    "timestep_embedding",
]


# ====================================================================== noise schedules


def linear_betas(T: int, beta_start: float | None = None, beta_end: float | None = None):
    """beta_t rising linearly over T steps: DDPM's 1e-4 to 0.02 for T = 1000, scaled by
    1000 / T for other T (so the total noise stays about the same; the end at most 0.999)
    unless given."""
    checks.positive_int("linear_betas", "T", T)
    scale = 1000 / T
    start = 1e-4 * scale if beta_start is None else beta_start
    end = min(0.02 * scale, 0.999) if beta_end is None else beta_end
    if not 0 < start <= end < 1:
        raise ValueError(f"linear_betas: need 0 < beta_start <= beta_end < 1, got {start}, {end}")
    return np.linspace(start, end, T, dtype=np.float64)


def cosine_betas(T: int, s: float = 0.008, max_beta: float = 0.999):
    """The cosine schedule of improved DDPM (Nichol and Dhariwal, 2021): alpha_bar follows
    f(t) = cos^2((t / T + s) / (1 + s) * pi / 2) / f(0), so the noise grows slowly at both
    ends; beta_t = 1 - f(t) / f(t - 1), capped at ``max_beta`` (the last steps)."""
    checks.positive_int("cosine_betas", "T", T)
    f = np.cos((np.arange(T + 1, dtype=np.float64) / T + s) / (1 + s) * math.pi / 2) ** 2
    return np.minimum(1 - f[1:] / f[:-1], max_beta)


class NoiseSchedule:
    """betas (T,), alphas = 1 - betas and alpha_bars = their cumulative product, float64.

    ``NoiseSchedule.linear(T)`` and ``NoiseSchedule.cosine(T)`` make the usual two.
    """

    def __init__(self, betas):
        betas = np.asarray(betas, dtype=np.float64)
        if betas.ndim != 1 or betas.size == 0 or not np.all((betas > 0) & (betas < 1)):
            raise ValueError("NoiseSchedule: betas must be a non-empty 1-D array in (0, 1)")
        self.betas = betas
        self.alphas = 1 - betas
        self.alpha_bars = np.cumprod(self.alphas)

    @classmethod
    def linear(cls, T: int, beta_start: float | None = None, beta_end: float | None = None):
        return cls(linear_betas(T, beta_start, beta_end))

    @classmethod
    def cosine(cls, T: int, s: float = 0.008):
        return cls(cosine_betas(T, s))

    @property
    def T(self) -> int:
        return len(self.betas)

    def __repr__(self) -> str:
        return f"NoiseSchedule(T={self.T}, beta_1={self.betas[0]:.3g}, beta_T={self.betas[-1]:.3g})"


# ====================================================================== time embedding


def timestep_embedding(t, dim: int, max_period: float = 10_000.0, dtype=np.float32) -> Tensor:
    """Sinusoidal embeddings of integer steps t (N,) -> (N, dim), as the Transformer's
    positions: [sin(t w_0), ..., sin(t w_{h-1}), cos(t w_0), ..., cos(t w_{h-1})] with
    w_k = max_period^(-k / h), h = dim // 2 (a zero column pads an odd dim). Computed in
    float64, returned as ``dtype`` on t's device. A constant: the network learns what to
    make of it (a Dense layer after it)."""
    checks.positive_int("timestep_embedding", "dim", dim)
    t = t.array if isinstance(t, Tensor) else t
    xp = backend.array_module(t) if backend.is_cupy_array(t) else np
    t = xp.asarray(t).reshape(-1).astype(np.float64)
    half = dim // 2
    frequencies = xp.exp(-math.log(max_period) * xp.arange(half, dtype=np.float64) / half)
    angles = t[:, None] * frequencies[None]  # (N, h)
    embedding = xp.concatenate([xp.sin(angles), xp.cos(angles)], axis=1)
    if dim % 2:
        embedding = xp.concatenate([embedding, xp.zeros_like(embedding[:, :1])], axis=1)
    return Tensor(embedding.astype(dtype), requires_grad=False, name="timestep_embedding")


# ====================================================================== forward process, loss


def _per_sample(values, t, like):
    """``values[t]`` (float64 numpy, t (N,)) as an (N, 1, ..., 1) array of ``like``'s dtype
    on its device, to broadcast over a batch of samples."""
    column = np.asarray(values[backend.to_host_array(t)], dtype=like.dtype)
    column = column.reshape((-1,) + (1,) * (like.ndim - 1))
    return backend.array_module(like.array).asarray(column)


def q_sample(schedule: NoiseSchedule, x0: Tensor, t, noise: Tensor) -> Tensor:
    """x_t = sqrt(alpha_bar_t) x_0 + sqrt(1 - alpha_bar_t) eps for each sample: x0 and noise
    (N, ...), t (N,) step indices in [0, T)."""
    a = _per_sample(np.sqrt(schedule.alpha_bars), t, x0)
    b = _per_sample(np.sqrt(1 - schedule.alpha_bars), t, x0)
    return x0 * Tensor(a, requires_grad=False) + noise * Tensor(b, requires_grad=False)


def draw_timesteps(schedule: NoiseSchedule, n: int) -> np.ndarray:
    """n step indices, uniform in [0, T), from tricycle's generator."""
    return random.generator().integers(0, schedule.T, size=n)


def draw_noise(shape, like: Tensor | None = None) -> Tensor:
    """Standard normal noise of ``shape`` from tricycle's generator (on the host, then moved
    to ``like``'s device and dtype when given)."""
    noise = random.generator().standard_normal(shape)
    if like is None:
        return to_tensor(noise, requires_grad=False)
    xp = backend.array_module(like.array)
    return Tensor(xp.asarray(noise.astype(like.dtype)), requires_grad=False)


def ddpm_loss(model, schedule: NoiseSchedule, x0: Tensor, t=None, noise: Tensor | None = None):
    """The simple epsilon-prediction loss mean((eps - model(x_t, t))^2), x_t from
    ``q_sample``. ``t`` (N,) and ``noise`` (like x0) are drawn from tricycle's generator
    unless given. ``model(x, t)`` takes a batch and its integer steps."""
    t = draw_timesteps(schedule, x0.shape[0]) if t is None else t
    noise = draw_noise(x0.shape, like=x0) if noise is None else noise
    x_t = q_sample(schedule, x0, t, noise)
    return MeanSquaredError()(noise, model(x_t, t))


# ====================================================================== sampling


def _predict_x0(x, eps, alpha_bar: float, clip):
    """x_0 = (x_t - sqrt(1 - alpha_bar_t) eps) / sqrt(alpha_bar_t), clipped to ``clip``
    (a (low, high) data range) when given."""
    x0 = (x - math.sqrt(1 - alpha_bar) * eps) / math.sqrt(alpha_bar)
    return x0 if clip is None else x0.clip(*clip)


def _start(model, shape):
    """The array module of the model's parameters (numpy for a model without any), and
    x_T ~ N(0, I) there."""
    parameters = model.parameters() if hasattr(model, "parameters") else []
    xp = backend.array_module(parameters[0].array) if parameters else np
    return xp, xp.asarray(draw_noise(shape).array)


def ancestral_sample(model, schedule: NoiseSchedule, shape, clip=(-1.0, 1.0)):
    """Samples of ``shape`` by DDPM's ancestral sampling, T network calls: from x_T ~ N(0, I),
    each step draws x_{t-1} ~ q(x_{t-1} | x_t, x_0) with x_0 predicted from model(x_t, t),

        mean = sqrt(alpha_bar_{t-1}) beta_t / (1 - alpha_bar_t) x_0
             + sqrt(alpha_t) (1 - alpha_bar_{t-1}) / (1 - alpha_bar_t) x_t
        var  = beta_t (1 - alpha_bar_{t-1}) / (1 - alpha_bar_t)

    and the last step returns the mean. Clipping x_0 to the data range (``clip``; None for
    none) keeps early, poor estimates from drifting. Runs where the model's parameters are;
    returns the array (numpy or cupy), float32."""
    xp, x = _start(model, shape)
    betas, alphas, alpha_bars = schedule.betas, schedule.alphas, schedule.alpha_bars
    with no_grad():
        for i in reversed(range(schedule.T)):
            t = xp.full(shape[0], i, dtype=np.int64)
            eps = model(Tensor(x, requires_grad=False), t).array
            x0 = _predict_x0(x, eps, alpha_bars[i], clip)
            previous = alpha_bars[i - 1] if i > 0 else 1.0
            c0 = math.sqrt(previous) * betas[i] / (1 - alpha_bars[i])
            ct = math.sqrt(alphas[i]) * (1 - previous) / (1 - alpha_bars[i])
            x = c0 * x0 + ct * x
            if i > 0:
                sigma = math.sqrt(betas[i] * (1 - previous) / (1 - alpha_bars[i]))
                x = x + sigma * xp.asarray(draw_noise(shape).array)
            x = x.astype(np.float32, copy=False)
    return x


def ddim_timesteps(T: int, steps: int) -> np.ndarray:
    """``steps`` step indices spread evenly over [0, T), ascending, from 0 to T - 1."""
    checks.positive_int("ddim_timesteps", "steps", steps)
    if steps > T:
        raise ValueError(f"ddim_timesteps: steps={steps} exceeds the schedule's T={T}")
    return np.unique(np.round(np.linspace(0, T - 1, steps)).astype(np.int64))


def ddim_sample(model, schedule: NoiseSchedule, shape, steps=50, eta=0.0, clip=(-1.0, 1.0)):
    """Samples of ``shape`` by DDIM over ``steps`` of the T steps (``ddim_timesteps``): from
    step t to the previous chosen step s, with x_0 and eps predicted at t,

        x_s = sqrt(alpha_bar_s) x_0 + sqrt(1 - alpha_bar_s - sigma^2) eps + sigma z,
        sigma = eta sqrt((1 - alpha_bar_s) / (1 - alpha_bar_t)) sqrt(1 - alpha_bar_t / alpha_bar_s)

    (alpha_bar_s = 1 after the first step: x_0 itself). eta = 0 is deterministic given x_T;
    eta = 1 matches the ancestral sampler's noise. When x_0 is clipped, eps is recomputed
    from it so that the two stay consistent. Returns the array (numpy or cupy), float32."""
    checks.non_negative("ddim_sample", "eta", eta)
    xp, x = _start(model, shape)
    alpha_bars = schedule.alpha_bars
    chosen = ddim_timesteps(schedule.T, steps)[::-1]
    with no_grad():
        for k, i in enumerate(chosen):
            t = xp.full(shape[0], i, dtype=np.int64)
            eps = model(Tensor(x, requires_grad=False), t).array
            x0 = _predict_x0(x, eps, alpha_bars[i], clip)
            if clip is not None:
                eps = (x - math.sqrt(alpha_bars[i]) * x0) / math.sqrt(1 - alpha_bars[i])
            previous = alpha_bars[chosen[k + 1]] if k + 1 < len(chosen) else 1.0
            sigma = eta * math.sqrt(
                (1 - previous) / (1 - alpha_bars[i]) * (1 - alpha_bars[i] / previous)
            )
            x = math.sqrt(previous) * x0 + math.sqrt(max(1 - previous - sigma**2, 0.0)) * eps
            if sigma > 0:
                x = x + sigma * xp.asarray(draw_noise(shape).array)
            x = x.astype(np.float32, copy=False)
    return x
