"""tricycle.optim on complex parameters against torch's: Adam, AdamW, Adamax, NAdam, RAdam,
RMSprop, Adagrad, Adadelta, ASGD and Rprop step a complex parameter as pairs of reals
(torch's ``view_as_real``), their state kept complex (its state_dict loads back); the
optimizers torch refuses complex parameters to (Adafactor) are refused here too. And the
complex leftovers: ``torch.sgn`` of a complex tensor and a complex tensor's device moves
inside a graph (values and gradients; a move to a GPU stood in on the host, and on a GPU)."""

import numpy as np
import pytest

import tricycle
from tricycle import backend
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
rng = np.random.default_rng(11)

OPTIMIZERS = [
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1, maximize=False)),
    ("AdamW", dict(lr=0.05, weight_decay=0.1)),
    ("Adamax", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.2)),
    ("Adadelta", dict(lr=1.0)),
    ("ASGD", dict(lr=0.05, t0=1)),
    ("Rprop", dict(lr=0.05)),
]


def _complex(shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _loss(w, b, x, y, module):
    """A real loss of complex parameters: |x w + b - y|^2 summed, plus |w|."""
    out = x @ w + b
    return ((out - y).abs() ** 2).sum() + w.abs().sum()


@pytest.mark.parametrize("case", range(len(OPTIMIZERS)))
def test_an_optimizer_steps_complex_parameters_as_torchs(case):
    name, settings = OPTIMIZERS[case]
    # torch's NAdam and ASGD keep float32 numbers (mu_product, eta): ~1e-9 apart on reals too
    rtol, atol = (1e-6, 1e-8) if name in ("NAdam", "ASGD") else (1e-9, 1e-12)
    w0, b0, x, y = _complex((4, 3)), _complex(3), _complex((6, 4)), _complex((6, 3))
    ours = [Tensor(w0, requires_grad=True), Tensor(b0, requires_grad=True)]
    theirs = [torch.tensor(w0, requires_grad=True), torch.tensor(b0, requires_grad=True)]
    optimizer = getattr(tricycle.optim, name)(ours, **settings)
    optimizer_t = getattr(torch.optim, name)(theirs, **settings)
    for _ in range(4):
        for params, opt, module in ((ours, optimizer, tricycle), (theirs, optimizer_t, torch)):
            opt.zero_grad()
            data = [module.tensor(v) for v in (x, y)]
            loss = _loss(*params, *data, module)
            loss.backward()
            opt.step()
        np.testing.assert_allclose(ours[0].array, theirs[0].detach().numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(ours[1].array, theirs[1].detach().numpy(), rtol=rtol, atol=atol)
    state = optimizer.state[ours[0]]
    for slot, value in optimizer_t.state[theirs[0]].items():
        if torch.is_tensor(value) and value.shape == theirs[0].shape:
            assert state[slot].dtype == np.complex128  # complex, as torch's
            np.testing.assert_allclose(state[slot], value.numpy(), rtol=rtol, atol=atol)
    saved = optimizer.state_dict()
    again = getattr(tricycle.optim, name)(ours, **settings)
    again.load_state_dict(saved)  # the complex state has the parameter's shape


def test_optimizers_torch_refuses_complex_parameters_to_are_refused():
    w = Tensor(_complex((2, 2)), requires_grad=True)
    with pytest.raises(NotImplementedError, match="complex"):
        tricycle.optim.Adafactor([w])
    w_t = torch.tensor(w.array, requires_grad=True)
    optimizer_t = torch.optim.Adafactor([w_t])  # torch's refuses it at the step
    w_t.abs().sum().backward()
    with pytest.raises(RuntimeError, match="complex"):
        optimizer_t.step()


def test_sgn_of_complex_tensors_equals_torchs():
    values = np.array([1 + 2j, 0, -3 + 0.5j, 2j, -1.5])
    z, z_t = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    weights = rng.standard_normal((2, 5))
    outs = (tricycle.sgn(z), z.sgn()), (torch.sgn(z_t), z_t.sgn())
    for out, out_t in zip(*outs):
        np.testing.assert_allclose(out.array, out_t.detach().numpy(), rtol=1e-12)
    for (out, _), w in ((outs[0], Tensor), (outs[1], torch.tensor)):
        (out.real * w(weights[0]) + out.imag * w(weights[1])).sum().backward()
    np.testing.assert_allclose(z.grad.array, z_t.grad.numpy(), rtol=1e-12, atol=1e-15)
    real = Tensor(np.array([-2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(tricycle.sgn(real).array, [-1.0, 0.0, 1.0])


def test_a_complex_tensors_move_to_the_host_is_differentiable():
    values = _complex((3, 2))
    z, z_t = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    moved, moved_t = (z * 2).to("cpu").cpu(), (z_t * 2).to("cpu").cpu()
    assert type(moved).__name__ == "ComplexTensor"
    (moved.abs() ** 2).sum().backward()
    (moved_t.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.array, z_t.grad.numpy(), rtol=1e-12)


def test_a_complex_tensors_move_between_devices_is_recorded(monkeypatch):
    """Node.to's move, as on a machine with a GPU (the device index and the copy stood in
    on the host): a complex tensor's move is complex-aware, its gradient moved back as is."""
    from tricycle import graph

    monkeypatch.setattr(graph, "parse_device", lambda device, op: 0)
    monkeypatch.setattr(graph, "move", lambda array, index: array.copy())
    values = _complex((3, 2))
    z, z_t = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    moved = graph.Node.to(z * (1 + 2j), "cuda")
    assert type(moved).__name__ == "ComplexTensor" and moved.args is not None
    (moved.abs() ** 2).sum().backward()
    ((z_t * (1 + 2j)).abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.array, z_t.grad.numpy(), rtol=1e-12)


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_complex_parameters_and_moves_on_a_gpu_are_the_hosts():
    w0, x = _complex((4, 3)), _complex((5, 4))
    results = []
    for device in ("cpu", "cuda"):
        w = tricycle.tensor(w0, device=device, requires_grad=True)
        optimizer = tricycle.optim.Adam([w], lr=0.1)
        for _ in range(3):
            optimizer.zero_grad()
            out = (tricycle.tensor(x, device=device) @ w).sgn()
            loss = (out.cuda().cpu().abs() ** 2 * tricycle.tensor(np.arange(3.0))).sum()
            loss = loss + (w.cpu().to(device).abs() ** 3).sum().cpu()  # both on the host
            loss.backward()
            optimizer.step()
        results.append(backend.to_host_array(w.array))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-9, atol=1e-12)
