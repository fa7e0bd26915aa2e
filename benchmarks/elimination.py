"""Jacobian accumulation order: vertex-elimination counts vs tenscalc's cost model.

Issue #13, item 7.  For a planar robot arm with ``n`` joints (end-effector
position from the joint angles; link lengths fixed), this script

* builds the scalar computational graph (cumulative angles, cos/sin, scaled by
  the link lengths, summed into x and y) and counts the multiplications of
  vertex elimination in forward order, in reverse order and in Markowitz order
  (always eliminate the vertex of least Markowitz degree, in-edges × out-edges);
  products with a unit partial (an addition's) are free, as in the literature;
* writes the same function in tenscalc (cumulative angles as a product with a
  lower-triangular ones matrix ``C``) and reports ``cost().flops`` of its
  compiled Jacobian, and of the same with the cumulative sum's Jacobian given
  (what a tensor language sees).

It also runs the vertex-elimination benchmarks of ``benchmarks/elimination_problems.py``
(graphax's ``simple``, RoeFlux-1d, a 6-DOF arm, a 6-joint planar arm): the products of
every elimination order on tenscalc's DAG, the compiled cost of the order
``tc.jacobian_accumulation`` chooses, and times against ``jax.jit(jax.jacfwd)`` and
``jax.jit(jax.jacrev)`` (vmapped for a batch), one process, one thread.

Usage::

    OMP_NUM_THREADS=1 XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
        python benchmarks/elimination.py [--no-times]
"""

from __future__ import annotations

import pathlib
import sys
from collections import defaultdict
from functools import partial

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


class Graph:
    """A computational graph; edge (i -> j) carries whether its partial is exactly 1."""

    def __init__(self) -> None:
        self.n = 0
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.succ: dict[int, dict[int, bool]] = defaultdict(dict)
        self.pred: dict[int, dict[int, bool]] = defaultdict(dict)

    def vertex(self, *parents: tuple[int, bool]) -> int:
        v = self.n
        self.n += 1
        for p, unit in parents:
            self.succ[p][v] = unit
            self.pred[v][p] = unit
        return v

    def copy(self) -> Graph:
        g = Graph()
        g.n, g.inputs, g.outputs = self.n, list(self.inputs), list(self.outputs)
        for k, v in self.succ.items():
            g.succ[k] = dict(v)
        for k, v in self.pred.items():
            g.pred[k] = dict(v)
        return g

    def intermediates(self) -> list[int]:
        ends = set(self.inputs) | set(self.outputs)
        return [v for v in range(self.n) if v not in ends]

    def eliminate(self, j: int) -> int:
        """Vertex elimination of ``j``: c_ki += c_kj c_ji; returns the multiplications."""
        count = 0
        for i, unit_in in self.pred[j].items():
            for k, unit_out in self.succ[j].items():
                count += not (unit_in or unit_out)
                unit = unit_in and unit_out
                if k in self.succ[i]:
                    unit = False  # a sum of two partials
                self.succ[i][k] = unit
                self.pred[k][i] = unit
            del self.succ[i][j]
        for k in self.succ[j]:
            del self.pred[k][j]
        self.succ[j].clear()
        self.pred[j].clear()
        return count


def robot_arm(n: int) -> Graph:
    g = Graph()
    theta = [g.vertex() for _ in range(n)]
    g.inputs = theta
    angle = theta[0]
    xs, ys = [], []
    for k in range(n):
        if k:
            angle = g.vertex((angle, True), (theta[k], True))
        c, s = g.vertex((angle, False)), g.vertex((angle, False))
        xs.append(g.vertex((c, False)))  # l_k cos
        ys.append(g.vertex((s, False)))  # l_k sin
    outputs = []
    for terms in (xs, ys):
        total = terms[0]
        for t in terms[1:]:
            total = g.vertex((total, True), (t, True))
        outputs.append(total)
    g.outputs = outputs
    return g


def counts(g: Graph) -> dict[str, int]:
    order = g.intermediates()
    result = {}
    for name, sequence in (("forward", order), ("reverse", order[::-1])):
        h = g.copy()
        result[name] = sum(h.eliminate(v) for v in sequence)
    h = g.copy()
    left = set(order)
    total = 0
    while left:
        # Markowitz degree: in-edges x out-edges (ties: the lower vertex)
        j = min(left, key=lambda v: (len(h.pred[v]) * len(h.succ[v]), v))
        total += h.eliminate(j)
        left.remove(j)
    result["markowitz"] = total
    return result


def tenscalc_cost(n: int) -> float:
    import tenscalc as tc

    src = "(l *(i,i->) cos(C *(ij,j->i) t)) *(,r->r) a + (l *(i,i->) sin(C *(ij,j->i) t)) *(,r->r) b"
    f = tc.parse(src, {"l": 1, "C": 2, "t": 1, "a": 1, "b": 1})
    jac = tc.jacobian(f, "t")
    return tc.compile(jac).cost({"l": (n,), "C": (n, n), "t": (n,), "a": (2,), "b": (2,)}).flops


def _best(fn, repeat: int = 7, number: int = 0) -> float:
    """Best of ``repeat`` timings of ``fn()`` in seconds (``number`` calls each, auto if 0)."""
    import timeit

    timer = timeit.Timer(fn)
    if not number:
        number, _ = timer.autorange()
    return min(timer.repeat(repeat, number)) / number


def table_counts() -> None:
    """Products of every elimination order on tenscalc's DAG of each problem, and the
    compiled costs (at scalar inputs) of the chosen order and of the reverse sweep."""
    import tenscalc as tc
    from benchmarks.elimination_problems import PROBLEMS, tenscalc_outputs

    print(
        "| problem | forward | reverse | Markowitz | Markowitz (cost) | auto: order, products "
        "| compiled flops / multiplications: auto (by cost) | tc.derivative per output | f alone |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
    for name in PROBLEMS:
        outs, names = tenscalc_outputs(name)
        shapes = {x: () for x in names}
        acc = tc.jacobian_accumulation(outs, names, shapes=shapes)
        c = acc.counts
        auto = tc.compile([e for row in acc.jacobians for e in row.values()]).cost(shapes)
        reverse = [tc.derivative(o, [tc.var(x, 0) for x in names]) for o in outs]
        swept = tc.compile([e for row in reverse for e in row.values()]).cost(shapes)
        alone = tc.compile(outs).cost(shapes)
        print(f"| {name} | {c['forward']} | {c['reverse']} | {c['markowitz']} | {c['markowitz-cost']} "
              f"| {acc.order}, {acc.products} | {auto.flops:.0f} / {auto.multiplications:.0f} "
              f"| {swept.flops:.0f} / {swept.multiplications:.0f} "
              f"| {alone.flops:.0f} / {alone.multiplications:.0f} |")  # fmt: skip


def _ready(fn, args):
    import jax

    return jax.block_until_ready(fn(*args))


def _jax_jacobians(fn, n_inputs: int, batched: bool):
    """jax.jit of jacfwd and of jacrev of ``fn`` (outputs stacked), vmapped for a batch."""
    import jax
    import jax.numpy as jnp

    def f(*args):
        return jnp.stack(fn(*args, jnp))

    argnums = tuple(range(n_inputs))
    fwd, rev = jax.jacfwd(f, argnums), jax.jacrev(f, argnums)
    if batched:
        fwd, rev = jax.vmap(fwd), jax.vmap(rev)
    return jax.jit(fwd), jax.jit(rev)


def table_times(batch: int) -> None:
    """Jacobian times: tenscalc's compiled Jacobian (diagonals for a batch) against
    jax.jit of jacfwd and jacrev (vmapped over the batch), in one process."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import tenscalc as tc
    from benchmarks.elimination_problems import PROBLEMS, tenscalc_outputs

    jax.config.update("jax_enable_x64", True)
    print(
        f"| problem ({'batch ' + str(batch) if batch else 'scalars'}) | tenscalc order | tenscalc µs "
        "| jit(jacfwd) µs | jit(jacrev) µs | max difference |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for name, (fn, names, point) in PROBLEMS.items():
        outs, names_ = tenscalc_outputs(name, batched=bool(batch))
        rng = np.random.default_rng(0)
        if batch:
            values = {x: v * (1 + 0.05 * rng.standard_normal(batch)) for x, v in zip(names, point)}
            shapes = {x: (batch,) for x in names}
        else:
            values = {x: np.float64(v) for x, v in zip(names, point)}
            shapes = {x: () for x in names}
        acc = tc.jacobian_accumulation(outs, names_, shapes=shapes)
        # a batch's Jacobians are diagonal: compiled as their diagonals (no n x n array);
        # a zero one (an output that does not depend on an input) is left out
        pairs = [(k, x) for k in range(len(outs)) for x in names]
        parts = {p: acc.partials[p[0]][p[1]] if batch else None for p in pairs}
        live = [p for p in pairs if not (batch and parts[p].value.op == "const" and parts[p].value.arg[0] == 0)]
        compiled = tc.compile([parts[p].value if batch else acc.jacobians[p[0]][p[1]] for p in live])
        got = dict(zip(live, compiled(**values)))
        fwd, rev = _jax_jacobians(fn, len(names), bool(batch))
        args = [jnp.asarray(values[x]) for x in names]
        reference = np.stack([np.asarray(a) for a in fwd(*args)], axis=-1)  # (batch,) outputs x inputs
        ours = np.zeros(reference.shape)
        for (k, x), g in got.items():
            ours[..., k, names.index(x)] = g
        diff = float(np.max(np.abs(ours - reference)))
        np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-12)
        rev(*args)
        t_tc = _best(partial(compiled, **values))
        t_fwd = _best(partial(_ready, fwd, args))
        t_rev = _best(partial(_ready, rev, args))
        print(f"| {name} | {acc.order} | {t_tc * 1e6:.1f} | {t_fwd * 1e6:.1f} | {t_rev * 1e6:.1f} | {diff:.1e} |")


def main() -> None:
    print("Planar arm, hand-built graph (reference counts) vs the tensor formulation:")
    print("| joints | forward | reverse | Markowitz | tenscalc Jacobian cost() flops |")
    print("|---:|---:|---:|---:|---:|")
    for n in (3, 6, 12, 24):
        c = counts(robot_arm(n))
        print(f"| {n} | {c['forward']} | {c['reverse']} | {c['markowitz']} | {tenscalc_cost(n):.0f} |")
    print()
    table_counts()
    if "--no-times" in sys.argv:
        return
    for batch in (0, 1000, 100_000):
        print()
        table_times(batch)


if __name__ == "__main__":
    main()
