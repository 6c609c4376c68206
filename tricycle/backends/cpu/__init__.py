"""The CPU backend: fused ops as plain loops compiled by numba (registered in
``tricycle.dispatch`` when imported)."""
