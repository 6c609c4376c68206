"""The strong Wolfe line search of ``LBFGS`` (``line_search_fn="strong_wolfe"``), as torch's
(itself a port of minFunc's and torch7's lswolfe): along a direction d from x, find a step t
whose loss f(x + t d) has decreased enough and whose slope has flattened enough:

    f(x + t d) <= f(x) + c1 t g.d          (sufficient decrease, Armijo)
    |g(x + t d).d| <= -c2 g.d              (the curvature condition, strong form)

First steps grow (by cubic extrapolation) until they bracket such a t; then the bracket
shrinks (by cubic interpolation, kept away from its ends) until a t in it satisfies both, or
the bracket is too small, or the evaluations run out. Losses, slopes and steps are numbers;
gradients are flat arrays (numpy or cupy) that nothing here writes to.
"""

import math
from collections.abc import Callable


def cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2,
    clipped to ``bounds`` (default: between x1 and x2); their middle if it has none."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        minimum = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        minimum = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(minimum, low), high)


def strong_wolfe(
    evaluate: Callable,
    t: float,
    d,
    f: float,
    g,
    gtd: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple:
    """A step t along ``d`` from the point where the loss is ``f``, its gradient ``g`` and
    its slope along d ``gtd`` (< 0), satisfying the strong Wolfe conditions.

    ``evaluate(t)`` returns (loss, flat gradient) at the point + t d, leaving the point as
    it was. Returns (loss, gradient, t, number of evaluations) at the step taken.
    """
    d_norm = float(abs(d).max())
    f_new, g_new = evaluate(t)
    evals = 1
    gtd_new = float(g_new.dot(d))

    # bracket an interval holding a point that satisfies the conditions
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done, ls_iter = False, 0
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f, bracket_g = [t_prev, t], [f_prev, f_new], [g_prev, g_new]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g, done = [t], [f_new], [g_new], True
            break
        if gtd_new >= 0:
            bracket, bracket_f, bracket_g = [t_prev, t], [f_prev, f_new], [g_prev, g_new]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        # extrapolate: a larger step, between 1.01 t and 10 t
        bounds = (t + 0.01 * (t - t_prev), t * 10)
        t_prev, t = t, cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds)
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
    if ls_iter == max_ls:  # no bracket: the largest step tried
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until a point in it satisfies the conditions
    insufficient_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:  # too small to go on
            break
        t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                              bracket[1], bracket_f[1], bracket_gtd[1])  # fmt: skip
        # a t near an end of the bracket twice running (or at it) moves to 0.1 of its width
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False

        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            # not decreased enough, or not below the low end: the new high end
            bracket[high], bracket_f[high], bracket_g[high] = t, f_new, g_new
            bracket_gtd[high] = gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                # the old low end becomes the high end
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low] = t, f_new, g_new
            bracket_gtd[low] = gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals
