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

Usage::

    python benchmarks/elimination.py            # a table for n = 3, 6, 12, 24
"""

from __future__ import annotations

import pathlib
import sys
from collections import defaultdict

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


def main() -> None:
    print("| joints | forward | reverse | Markowitz | tenscalc Jacobian cost() flops |")
    print("|---:|---:|---:|---:|---:|")
    for n in (3, 6, 12, 24):
        c = counts(robot_arm(n))
        print(f"| {n} | {c['forward']} | {c['reverse']} | {c['markowitz']} | {tenscalc_cost(n):.0f} |")


if __name__ == "__main__":
    main()
