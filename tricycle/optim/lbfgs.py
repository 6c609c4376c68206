"""``LBFGS`` with torch.optim's signature, formula and ``step(closure)`` contract: the
limited-memory BFGS quasi-Newton method (Nocedal), as torch writes it after minFunc.

All parameters are one flat vector x, their gradients one flat g. Each iteration of a
``step`` moves x along d = -H g, where H, an approximation of the inverse Hessian, is never
formed: it is the two-loop recursion over the last ``history_size`` pairs

    s = x_next - x = t d,   y = g_next - g,   rho = 1 / y.s     (kept only when y.s > 1e-10)

starting from the scaled identity (y.s / y.y) I of the latest pair. The first iteration ever
steps along -g by min(1, 1 / |g|_1) lr; later ones by lr, or by the step that the strong
Wolfe line search finds (``tricycle.optim.line_search``). A ``step`` runs up to ``max_iter``
iterations and ``max_eval`` evaluations of ``closure`` (which zeroes the gradients, computes
the loss, calls backward and returns the loss), and stops early when the largest gradient
element is at most ``tolerance_grad`` or the loss or x change by less than
``tolerance_change``. The history carries over from one ``step`` to the next.

As torch's, one parameter group only, and the state (torch's keys: "d", "t", "old_dirs",
"old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss", "al", "func_evals", "n_iter")
belongs to the first parameter. The flat vectors are arrays of the parameters' device
(numpy or cupy); the scalars of the recursion are Python numbers (double precision).
"""

from collections.abc import Callable

import numpy as np

from tricycle import backend, checks
from tricycle.grad_modes import enable_grad
from tricycle.optim.line_search import strong_wolfe
from tricycle.optim.optimizer import Optimizer
from tricycle.tensor import Tensor

_HISTORIES = ("old_dirs", "old_stps", "ro", "al")  # the state's lists
_FLAT = ("d", "prev_flat_grad")  # the state's flat arrays (besides old_dirs and old_stps)


class LBFGS(Optimizer):
    """torch.optim.LBFGS: limited-memory BFGS over all parameters as one vector; each
    ``step(closure)`` runs several iterations, each evaluating ``closure`` once or more."""

    CHECKS = {
        "lr": checks.non_negative,
        "max_iter": checks.positive_int,
        "max_eval": checks.positive_int,
        "tolerance_grad": checks.non_negative,
        "tolerance_change": checks.non_negative,
        "history_size": checks.positive_int,
        "line_search_fn": checks.optional(checks.one_of(("strong_wolfe",))),
    }

    def __init__(
        self,
        params,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ):
        checks.positive_int("LBFGS", "max_iter", max_iter)
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_iter * 5 // 4 if max_eval is None else max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict) -> None:
        if self.param_groups:
            raise ValueError(
                "LBFGS: one parameter group only (per-parameter options are not supported, "
                "as in torch): its state is that of all parameters as one vector"
            )
        super().add_param_group(param_group)

    # ------------------------------------------------------------------ flat vectors
    @property
    def _params(self) -> list[Tensor]:
        return self.param_groups[0]["params"]

    def _flat_grad(self):
        """Every parameter's gradient (zeros where there is none) as one vector (N,)."""
        xp = self._params[0].xp
        return xp.concatenate(
            [
                p.grad.array.reshape(-1) if p.grad is not None else xp.zeros(p.size, p.dtype)
                for p in self._params
            ]
        )

    def _add_to_params(self, t: float, d) -> None:
        """x += t d, in place, each parameter taking its slice of d."""
        start = 0
        for p in self._params:
            p.array += t * d[start : start + p.size].reshape(p.shape)
            start += p.size

    def _evaluate(self, closure: Callable) -> float:
        with enable_grad():  # the closure records a graph whatever the mode around step
            return closure()

    # ------------------------------------------------------------------ the step
    def step(self, closure: Callable | None = None):
        """Up to ``max_iter`` iterations of L-BFGS; returns the loss ``closure`` gave first,
        at the parameters as they were."""
        if not callable(closure):
            raise TypeError(
                "LBFGS.step: needs a closure that zeroes the gradients, computes the loss, "
                f"calls backward and returns the loss; got {closure!r}"
            )
        group = self.param_groups[0]
        self.check_group(group, "param_groups[0]")
        lr, max_iter, max_eval = float(group["lr"]), group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        first_loss = self._evaluate(closure)
        loss, evals = float(first_loss), 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if float(abs(flat_grad).max()) <= tolerance_grad:
            return first_loss  # already optimal

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # the direction: -g first, then -H g by the two-loop recursion
            if state["n_iter"] == 1:
                d, old_dirs, old_stps, ro, H_diag = -flat_grad, [], [], [], 1.0
            else:
                y, s = flat_grad - prev_flat_grad, d * t
                ys = float(y.dot(s))
                if ys > 1e-10:  # keep the pair only where the curvature is positive
                    for history, new in ((old_dirs, y), (old_stps, s), (ro, 1.0 / ys)):
                        if len(history) == history_size:  # forget the oldest pair
                            history.pop(0)
                        history.append(new)
                    H_diag = ys / float(y.dot(y))
                al = state.setdefault("al", [None] * history_size)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = float(old_stps[i].dot(q)) * ro[i]
                    q -= al[i] * old_dirs[i]
                d = r = q * H_diag  # (N,)
                for i in range(len(old_dirs)):
                    be_i = float(old_dirs[i].dot(r)) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]
            prev_flat_grad, prev_loss = flat_grad, loss

            # the step length
            t = min(1.0, 1.0 / float(abs(flat_grad).sum())) * lr if state["n_iter"] == 1 else lr
            gtd = float(flat_grad.dot(d))  # the slope along d
            if gtd > -tolerance_change:
                break
            if group["line_search_fn"] is not None:
                loss, flat_grad, t, ls_evals = self._line_search(closure, t, d, loss, flat_grad,
                                                                 gtd, max_eval - evals)  # fmt: skip
                self._add_to_params(t, d)
            else:
                self._add_to_params(t, d)
                ls_evals = 0
                if n_iter != max_iter:  # the last iteration's loss is left to the next step
                    loss, flat_grad, ls_evals = float(self._evaluate(closure)), self._flat_grad(), 1
            evals += ls_evals
            state["func_evals"] += ls_evals

            # stop?
            if n_iter == max_iter or evals >= max_eval:
                break
            if float(abs(flat_grad).max()) <= tolerance_grad:
                break
            if float(abs(d * t).max()) <= tolerance_change:  # x no longer changes
                break
            if abs(loss - prev_loss) < tolerance_change:  # nor does the loss
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag)
        state.update(prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return first_loss

    def _line_search(self, closure, t: float, d, loss: float, flat_grad, gtd: float, max_ls):
        """The strong Wolfe search along d from the parameters as they are, which it leaves
        as they were: (loss, gradient, step, evaluations)."""
        x = [p.array.copy() for p in self._params]

        def evaluate(step: float):
            self._add_to_params(step, d)
            value, grad = float(self._evaluate(closure)), self._flat_grad()
            for p, saved in zip(self._params, x):
                p.array[...] = saved
            return value, grad

        return strong_wolfe(evaluate, t, d, loss, flat_grad, gtd, max_ls=max_ls)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        """The base layout (``Optimizer.state_dict``), the history lists copied too."""
        saved = super().state_dict()
        for slots in saved["state"].values():
            for key in _HISTORIES:
                if key in slots:
                    slots[key] = [_host_copy(v) for v in slots[key]]
        return saved

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore from ``state_dict()``: the group's settings, and the state of all the
        parameters as one vector, each flat array checked against their total size and
        moved to their device in their dtype."""
        owner = "LBFGS.load_state_dict"
        if not isinstance(state_dict, dict) or not isinstance(state_dict.get("state"), dict):
            raise ValueError(f"{owner}: expected a dict with 'state' and 'param_groups'")
        if set(state_dict["state"]) - {0}:
            raise ValueError(
                f"{owner}: state for parameters {sorted(set(state_dict['state']) - {0})}; "
                "LBFGS keeps its whole state with the first parameter (0)"
            )
        slots = state_dict["state"].get(0, {})
        restored = {key: self._restored(owner, key, value) for key, value in slots.items()}
        super().load_state_dict({**state_dict, "state": {}})
        if restored:
            self.state[self._params[0]] = restored

    def _restored(self, owner: str, key: str, value):
        """A saved state value: a flat array (or a list of them) of the parameters' total
        size, on their device in their dtype; a number as it is."""
        if key in _HISTORIES:
            if not isinstance(value, list):
                checks.fail(owner, f"state[0][{key!r}]", "a list", type(value).__name__, TypeError)
            return [self._restored(owner, f"{key}[{i}]", v) for i, v in enumerate(value)]
        if not hasattr(value, "shape") or isinstance(value, np.generic):
            return value.item() if isinstance(value, np.generic) else value
        size = sum(p.size for p in self._params)
        if value.shape != (size,):
            raise ValueError(
                f"{owner}: the state {key!r} has shape {value.shape}; expected ({size},), the "
                "parameters' total size (a state_dict of other parameters?)"
            )
        first = self._params[0]
        array = np.array(backend.to_host_array(value), copy=True).astype(first.dtype, copy=False)
        return backend.to_device_array(array, first.array.device.id) if first.on_gpu else array


def _host_copy(value):
    """A state value for a state_dict: an array as a host copy, anything else as it is."""
    return backend.host_snapshot(value) if hasattr(value, "shape") else value
