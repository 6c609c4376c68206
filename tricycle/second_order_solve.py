"""Double backward of ``linalg.solve_triangular`` (``create_graph=True``:
``tricycle.second_order``).

``solve_triangular`` shares its back_fns with ``linalg.solve`` (``linalg.systems._left_solve``):
X = T^-1 B, with T the triangle of A that the solve reads (its diagonal taken as ones when A
is unitriangular). Its gradients are solve's, with dA kept to the entries read::

    dB = T^-T G                  a triangular solve again: T^T has the other triangle
    dA = keep(-dB X^T)           keep: the projection onto the entries read

Both are written with differentiable ops: dB is ``solve_triangular`` itself on A^T (whose
back_fns come back here, so every order goes through them), and ``keep`` is linear and its
own adjoint (a fixed mask). ``second_order_final``'s solve rule sends here the nodes whose dA
back_fn keeps a triangle.
"""

import importlib

from tricycle.second_order_base import cell, linear, summed_to


def reads_a_triangle(node) -> bool:
    """Whether ``node`` (made by ``linalg.systems._left_solve``) is a triangular solve's: its
    dA back_fn keeps the entries of one triangle."""
    return cell(node.back_fns[0], "keep") is not None


def triangular(node, which: int, g):
    """The gradient of input ``which`` (0: A, 1: B) of the triangular solve ``node`` = X,
    from the output's gradient ``g`` (..., n, k), as a Tensor in the graph."""
    from tricycle.ops import swapaxes

    linalg = importlib.import_module("tricycle.linalg")
    A, B = node.args
    keep = cell(node.back_fns[0], "keep")
    n, xp = A.shape[-1], node.xp
    read = keep(xp.ones((n, n), A.dtype))  # (n, n): 1 where the solve reads A
    upper = n > 1 and bool(read[0, n - 1])
    unitriangular = cell(keep, "unitriangular")
    A_T = swapaxes(A, -1, -2)
    dB = linalg.solve_triangular(A_T, g, upper=not upper, unitriangular=unitriangular)
    if which == 1:
        return summed_to(dB, B.shape)
    dA = -(dB @ swapaxes(node, -1, -2))  # (..., n, n), X^T differentiable through the node
    return summed_to(linear(dA, keep, keep, "triangle"), A.shape)
