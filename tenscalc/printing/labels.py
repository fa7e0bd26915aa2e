"""Names people give derivatives: what the CLI and the web page call the k-th one."""

from __future__ import annotations


def derivative_label(k: int, expr_order: int) -> str:
    """What to call the ``k``-th derivative of an expression of order ``expr_order``.

    >>> derivative_label(1, 0), derivative_label(1, 1), derivative_label(2, 0), derivative_label(3, 0)
    ('gradient', 'Jacobian', 'Hessian', 'derivative 3')
    """
    if k == 1:
        return "gradient" if expr_order == 0 else "Jacobian"
    if k == 2:
        return "Hessian" if expr_order == 0 else "second derivative"
    return f"derivative {k}"
