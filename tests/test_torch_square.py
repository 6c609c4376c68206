"""torch's ``square`` and ``neg`` as functions, and the schedulers' home module, against torch:
what "Dive into Deep Learning"'s optimization chapter calls (tests/test_d2l_optim_gan.py).

- ``tricycle.square(x)`` and ``tricycle.neg(x)`` are the Tensor methods (x * x, -x): torch's
  values, dtypes (an integer tensor stays integer) and gradients; ``out=`` is refused clearly,
  as tricycle's other functions refuse it.
- each scheduler class of ``tricycle.optim.lr_scheduler`` says that module is its home, as
  torch's do, so a training loop that tells the library's schedulers from its own by
  ``scheduler.__module__ == lr_scheduler.__name__`` (d2l's ``train`` in lr-scheduler) steps
  them; and a scheduler pickles by that public path.
"""

import pickle

import numpy as np
import pytest

import tricycle
from tricycle.optim import lr_scheduler

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["square", "neg"])
def test_square_and_neg_are_torchs(name):
    x = np.array([[1.5, -2.0, 0.25], [3.0, -0.5, 0.0]], dtype=np.float32)
    ours, theirs = tricycle.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, want = getattr(tricycle, name)(ours), getattr(torch, name)(theirs)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-6)
    weights = np.linspace(-1, 1, x.size, dtype=np.float32).reshape(x.shape)
    (got * tricycle.tensor(weights)).sum().backward()
    (want * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)
    integers = np.array([2, -3, 4])  # an integer tensor stays an integer one, as torch's
    got = getattr(tricycle, name)(tricycle.tensor(integers))
    want = getattr(torch, name)(torch.tensor(integers))
    assert got.dtype == np.int64 and want.dtype == torch.int64
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises((TypeError, ValueError), match=name):
        getattr(tricycle, name)(tricycle.tensor(x), out=tricycle.tensor(x))


def test_schedulers_live_in_lr_scheduler():
    parameter = tricycle.nn.Parameter(tricycle.zeros(2))
    optimizer = tricycle.optim.SGD([parameter], lr=0.5)
    scheduler = lr_scheduler.MultiStepLR(optimizer, milestones=[1], gamma=0.5)
    assert scheduler.__module__ == lr_scheduler.__name__ == "tricycle.optim.lr_scheduler"
    for name in lr_scheduler.__all__:  # every one, as torch's
        ours, theirs = getattr(lr_scheduler, name), getattr(torch.optim.lr_scheduler, name)
        assert ours.__module__.replace("tricycle", "torch") == theirs.__module__, name
    scheduler.step()
    again = pickle.loads(pickle.dumps(scheduler))
    assert type(again) is lr_scheduler.MultiStepLR and again.get_last_lr() == [0.25]
