"""The binder's rewrites of sums (:mod:`tenscalc.compiler.factoring`), and the layout
of a product read by a sum (issue 27 item 4).

Each rewrite is checked by the cost model (multiplications counted with and
without it, at the same shapes) and by values: the interpreter, and central
differences of the function, with distinct axis lengths.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler import factoring, program
from tenscalc.compiler.plan import Term

AOPT = "inv(X *(ki,kj->ij) X + A) *(ii,->) 1"  # tr((XᵀX + A)⁻¹), A not symmetric
OT = "a *(i,i->) u + b *(j,j->) v - 0.05 * (exp(20 * (u *(i,j->ij) 1 + 1 *(i,j->ij) v - C)) *(ij,->) 1)"
OT_ORDERS = {"a": 1, "b": 1, "u": 1, "v": 1, "C": 2}
CP = "(T - (A *(ir,jr->ijr) B) *(ijr,kr->ijk) C) *(ijk,ijk->) (T - (A *(ir,jr->ijr) B) *(ijr,kr->ijk) C)"


def _without(monkeypatch, name: str) -> None:
    """Bind as if the rewrite ``name`` did not exist."""
    if name == "factor_shared":
        monkeypatch.setattr(program, name, lambda plan, dense, skip, search, memo=None: (plan, dense, skip))
    elif name == "gather_sums":  # the sum written into one buffer (tenscalc.compiler.accumulate)
        monkeypatch.setattr(program, name, lambda plan, dense, skip: (plan, skip))
    else:
        monkeypatch.setattr(program, name, lambda plan, skip=frozenset(): plan)


def _central(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """The gradient of the scalar function ``f`` at ``x`` by central differences."""
    grad = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


def _aopt_data(n: int, m: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(4)
    return {"X": rng.standard_normal((n, m)), "A": rng.standard_normal((m, m)) + m * np.eye(m)}


# ------------------------------------------------------------------ X P + X Q -> X (P + Q)


def test_a_sum_of_two_gemms_sharing_x_is_one_gemm(monkeypatch):
    # d tr((XᵀX + A)⁻¹) / dX = -X S⁻²ᵀ - X S⁻²: two n x m x m products, or one of X with S⁻²ᵀ + S⁻²
    n, m = 2000, 400
    compiled = tc.compile(tc.gradient(tc.parse(AOPT, {"X": 2, "A": 2}), "X"))
    shapes = {"X": (n, m), "A": (m, m)}
    factored = compiled.cost(shapes)
    _without(monkeypatch, "factor_shared")
    separate = tc.compile(compiled.exprs[0]).cost(shapes)
    # one GEMM fewer; the common -1 scales the m x m inner sum instead of subtracting
    assert separate.multiplications - factored.multiplications == n * m * m - m * m
    assert factored.flops < separate.flops - 1.9 * n * m * m  # its multiplications and additions
    assert factored.peak_memory < separate.peak_memory  # one n x m product alive, not two


@pytest.mark.parametrize("n, m", [(5, 3), (4, 2), (2, 4)])
def test_the_factored_gradient_agrees_with_the_interpreter_and_differences(n, m):
    f = tc.parse(AOPT, {"X": 2, "A": 2})
    gradient = tc.gradient(f, "X")
    data = _aopt_data(n, m)
    compiled = tc.compile(gradient)
    assert len(compiled._bind({"X": (n, m), "A": (m, m)}).ops) > 0
    for _ in range(2):  # the loop of bound steps, then the fused function
        np.testing.assert_allclose(compiled(data), tc.evaluate(gradient, data), rtol=1e-12, atol=1e-12)
    numeric = _central(lambda x: float(tc.evaluate(f, {**data, "X": x})), data["X"])
    np.testing.assert_allclose(compiled(data), numeric, rtol=1e-6, atol=1e-7)


def test_the_generated_module_factors_too():
    gradient = tc.gradient(tc.parse(AOPT, {"X": 2, "A": 2}), "X")
    source = tc.to_python(gradient, shapes={"X": (5, 3), "A": (3, 3)})
    products_with_x = [line for line in source.splitlines() if re.search(r"\bX\b.* @ |@ .*\bX\b", line)]
    assert len(products_with_x) == 1, products_with_x
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the module under test
    data = _aopt_data(5, 3)
    np.testing.assert_allclose(namespace["f"](**data), tc.evaluate(gradient, data), rtol=1e-12, atol=1e-12)


THREE = {"X": 2, "P": 2, "Q": 2, "R": 2, "Y": 2, "S": 2}


@pytest.mark.parametrize(
    "src, groups, gemms_saved",
    [
        ("X *(ij,jk->ik) P + X *(ij,kj->ik) Q - 2 * X *(ij,jk->ik) R", 1, 2),  # X (P + Qᵀ - 2 R)
        ("X *(ij,jk->ik) P + Y *(ij,jk->ik) S - X *(ij,kj->ik) Q", 1, 1),  # X (P - Qᵀ) + Y S
        ("X *(ij,jk->ik) P + X *(ij,kj->ik) Q + Y *(ij,jk->ik) S + Y *(ij,kj->ik) R", 2, 2),  # X (...) + Y (...)
    ],
)
def test_longer_sums_fold_every_group_sharing_an_operand(src, groups, gemms_saved, monkeypatch):
    f = tc.parse(src, THREE)
    compiled = tc.compile(f)
    n, m, k = 60, 50, 40
    r_shape = (k, m) if "Y *(ij,kj->ik) R" in src else (m, k)
    shapes = {"X": (n, m), "Y": (n, m), "P": (m, k), "Q": (k, m), "R": r_shape, "S": (m, k)}
    shapes = {name: shape for name, shape in shapes.items() if name in compiled.inputs}
    assert _factorings(compiled, shapes) == groups
    factored = compiled.cost(shapes)
    _without(monkeypatch, "factor_shared")
    assert tc.compile(f).cost(shapes).multiplications - factored.multiplications >= gemms_saved * n * m * k - 2 * m * k
    small = {name: tuple({n: 5, m: 3, k: 4}[length] for length in shape) for name, shape in shapes.items()}
    rng = np.random.default_rng(11)
    data = {name: rng.standard_normal(shape) for name, shape in small.items()}
    monkeypatch.undo()
    compiled = tc.compile(f)
    assert _factorings(compiled, small) == groups
    for _ in range(2):
        np.testing.assert_allclose(compiled(data), tc.evaluate(f, data), rtol=1e-12, atol=1e-12)
    namespace: dict = {}
    exec(compile(tc.to_python(f, shapes=small), "<generated>", "exec"), namespace)  # noqa: S102
    np.testing.assert_allclose(namespace["f"](**data), tc.evaluate(f, data), rtol=1e-12, atol=1e-12)


# X u vᵀ + X w zᵀ: two matrix-vector products and two outer products, or X (u vᵀ + w zᵀ),
# a GEMM; the second is cheaper only when v and z have one entry
RANK_TWO = "(X *(ij,j->i) u) *(i,k->ik) v + (X *(ij,j->i) w) *(i,k->ik) z"
RANK_TWO_ORDERS = {"X": 2, "u": 1, "v": 1, "w": 1, "z": 1}


def _rank_two_data(n: int, m: int, k: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    lengths = {"X": (n, m), "u": (m,), "v": (k,), "w": (m,), "z": (k,)}
    return {name: rng.standard_normal(shape) for name, shape in lengths.items()}


def _factorings(compiled, shapes) -> int:
    """How many inner sums factor_shared makes for these shapes (products of several terms)."""
    plan, folded = program.fold_squares(compiled.plan)
    resolver = program.ShapeResolver(compiled._graphs, shapes)
    dense = [program.step_shape(step, resolver) for step in plan.steps]
    new_plan, _, skipped = factoring.factor_shared(plan, dense, folded, program.choose_path)

    def sums(steps) -> int:
        return sum(1 for s in steps if s.kind == "product" and len(s.data) > 1 and s.index not in skipped)

    return sums(new_plan.steps) - sums(plan.steps)


def test_factoring_is_decided_by_the_flops_at_the_shapes_bound(monkeypatch):
    compiled = tc.compile(tc.parse(RANK_TWO, RANK_TWO_ORDERS))
    wide = {"X": (300, 200), "u": (200,), "v": (100,), "w": (200,), "z": (100,)}
    thin = {**wide, "v": (1,), "z": (1,)}
    assert _factorings(compiled, wide) == 0  # X (u vᵀ + w zᵀ) would cost 300·200·100
    assert _factorings(compiled, thin) == 1
    kept, factored = compiled.cost(wide), compiled.cost(thin)
    _without(monkeypatch, "factor_shared")
    plain = tc.compile(compiled.exprs[0])
    assert plain.cost(wide) == kept  # not applied: the same program
    assert factored.flops < plain.cost(thin).flops


@pytest.mark.parametrize("lengths", [(2, 3, 4), (5, 4, 1), (3, 2, 1)])
def test_a_factored_or_kept_rank_two_sum_agrees_with_the_interpreter(lengths):
    f = tc.parse(RANK_TWO, RANK_TWO_ORDERS)
    data = _rank_two_data(*lengths)
    compiled = tc.compile(f)
    for _ in range(2):
        np.testing.assert_allclose(compiled(data), tc.evaluate(f, data), rtol=1e-12, atol=1e-12)


def test_a_product_read_twice_or_handed_out_is_not_folded_into_a_sum():
    # X P is an output too: computing it inside X (P + Q) would lose it
    f = tc.parse("X *(ij,jk->ik) P", {"X": 2, "P": 2, "Q": 2})
    g = tc.parse("X *(ij,jk->ik) P + X *(ij,kj->ik) Q", {"X": 2, "P": 2, "Q": 2})
    both = tc.compile([f, g])
    shapes = {"X": (5, 3), "P": (3, 4), "Q": (4, 3)}
    assert _factorings(both, shapes) == 0
    assert _factorings(tc.compile(g), shapes) == 1
    rng = np.random.default_rng(6)
    data = {name: rng.standard_normal(shape) for name, shape in shapes.items()}
    for _ in range(2):
        for got, expected in zip(both(data), [tc.evaluate(f, data), tc.evaluate(g, data)]):
            np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_the_inner_sum_takes_each_coefficient():
    # 3 X P - 2 X Qᵀ: X (3 P - 2 Qᵀ), the coefficients on the small matrices
    g = tc.parse("3 * X *(ij,jk->ik) P - 2 * X *(ij,kj->ik) Q", {"X": 2, "P": 2, "Q": 2})
    compiled = tc.compile(g)
    shapes = {"X": (5, 3), "P": (3, 4), "Q": (4, 3)}
    plan, folded = program.fold_squares(compiled.plan)
    resolver = program.ShapeResolver(compiled._graphs, shapes)
    dense = [program.step_shape(step, resolver) for step in plan.steps]
    new_plan, new_dense, dropped = factoring.factor_shared(plan, dense, folded, program.choose_path)
    (inner_slot,) = [s.index for s in new_plan.steps if s.kind == "product" and len(s.data) == 2]
    inner: tuple[Term, Term] = new_plan.steps[inner_slot].data
    assert sorted(term.factor for term in inner) == [-2, 3]
    assert new_dense[inner_slot] == (3, 4)
    rng = np.random.default_rng(7)
    data = {name: rng.standard_normal(shape) for name, shape in shapes.items()}
    np.testing.assert_allclose(compiled(data), tc.evaluate(g, data), rtol=1e-12)


def test_broadcasts_along_the_same_axes_are_summed_before_broadcasting(monkeypatch):
    # u ⊗ 1 + 3 (w ⊗ 1) + C: (u + 3 w) ⊗ 1 + C, one n-vector sum instead of an n x m one
    f = tc.parse("exp(u *(i,j->ij) 1 + 3 * (w *(i,j->ij) 1) + C)", {"u": 1, "w": 1, "C": 2})
    n, m = 300, 200
    shapes = {"u": (n,), "w": (n,), "C": (n, m)}
    compiled = tc.compile(f)
    assert _factorings(compiled, shapes) == 1
    summed = compiled.cost(shapes)
    _without(monkeypatch, "factor_shared")
    # one n x m addition fewer, less the inner sum's n additions and its read of u (n)
    assert tc.compile(f).cost(shapes).flops - summed.flops >= n * m - 2 * n
    monkeypatch.undo()
    rng = np.random.default_rng(12)
    data = {"u": rng.standard_normal(4), "w": rng.standard_normal(4), "C": rng.standard_normal((4, 3))}
    for _ in range(2):
        np.testing.assert_allclose(tc.compile(f)(data), tc.evaluate(f, data), rtol=1e-12)


# ------------------------------------------------------------------ a scale outside a broadcast


def _ot_data(n: int, m: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(8)
    return {
        "a": np.full(n, 1 / n),
        "b": np.full(m, 1 / m),
        "u": 0.1 * rng.standard_normal(n),
        "v": 0.1 * rng.standard_normal(m),
        "C": rng.random((n, m)),
    }


def test_the_transport_scale_multiplies_the_vectors_not_the_matrix(monkeypatch):
    f = tc.parse(OT, OT_ORDERS)
    gradients = [tc.gradient(f, "u"), tc.gradient(f, "v")]
    n, m = 2000, 1500
    shapes = {"a": (n,), "b": (m,), "u": (n,), "v": (m,), "C": (n, m)}
    # written into one buffer (accumulate), the sum scales each broadcast's vector too
    assert tc.compile(gradients).cost(shapes).multiplications == n * m + n + m
    _without(monkeypatch, "gather_sums")  # this rewrite alone, on the sum of slots
    scaled = tc.compile(gradients).cost(shapes)
    _without(monkeypatch, "scale_broadcasts")
    broad = tc.compile(gradients).cost(shapes)
    # 20 (u ⊗ 1) and 20 (1 ⊗ v): n + m multiplications, not 2 n m; 20 C stays n m
    assert broad.multiplications - scaled.multiplications == 2 * n * m - (n + m)
    assert scaled.multiplications == n * m + n + m


def test_a_broadcast_scaled_in_a_sum_keeps_its_sign():
    compiled = tc.compile(tc.parse("exp(20 * (u *(i,j->ij) 1) - 3 * (1 *(i,j->ij) v) - C)", OT_ORDERS))
    plan = factoring.scale_broadcasts(compiled.plan)
    (add,) = [step for step in plan.steps if step.kind == "add"]
    assert sorted(item.coef for item in add.data) == [-1, -1, 1]
    broadcasts = [plan.steps[item.slot] for item in add.data]
    factors = sorted(step.data[0].factor for step in broadcasts if step.kind == "product")
    assert factors == [3, 20]


@pytest.mark.parametrize("n, m", [(2, 3), (5, 4)])
def test_the_transport_gradients_agree_with_the_interpreter_and_differences(n, m):
    f = tc.parse(OT, OT_ORDERS)
    data = _ot_data(n, m)
    gradients = [tc.gradient(f, "u"), tc.gradient(f, "v")]
    compiled = tc.compile(gradients)
    for _ in range(2):
        got = compiled(data)
        for value, gradient in zip(got, gradients):
            np.testing.assert_allclose(value, tc.evaluate(gradient, data), rtol=1e-12, atol=1e-14)
    for value, name in zip(compiled(data), "uv"):
        numeric = _central(lambda x, name=name: float(tc.evaluate(f, {**data, name: x})), data[name])
        np.testing.assert_allclose(value, numeric, rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ a product read by a sum


@pytest.mark.parametrize("lengths", [(3, 4, 5), (6, 6, 6)])
def test_the_cp_model_is_laid_out_like_the_tensor_it_is_subtracted_from(lengths):
    # T - C (A ⊙ B)ᵀ: the model computed in T's axis order, so the sum reads both arrays
    # in memory order (laid (k, i, j), the sum strode across 1.7 M entries: 17.1 ms against 6.6);
    # equal lengths tie the model's three-operand paths (choose_path breaks the tie for T's order)
    f = tc.parse(CP, {"T": 3, "A": 2, "B": 2, "C": 2})
    gradients = [tc.gradient(f, name) for name in "ABC"]
    compiled = tc.compile(gradients)
    rng = np.random.default_rng(9)
    data = {"T": rng.standard_normal(lengths)} | {name: rng.standard_normal((n, 2)) for name, n in zip("ABC", lengths)}
    bound = compiled._bind({name: value.shape for name, value in data.items()})
    env: list = [None] * (bound.n_slots + 1)
    for slot, name in zip(bound.input_slots, compiled.inputs):
        env[slot] = data[name]
    sums = []
    for op in bound.ops:
        env[op.slot] = op.fn(env)
        if op.kind in ("add", "accumulate"):
            sums.append(op)
    (difference,) = sums
    if difference.kind == "accumulate":  # the model computed into the sum's buffer (its operands are inputs)
        model = [difference.slot]
    else:
        model = [slot for slot in difference.reads if slot not in bound.input_slots]
    assert model and all(env[slot].shape == lengths and env[slot].flags.c_contiguous for slot in model)
    for _ in range(2):
        for value, gradient in zip(compiled(data), gradients):
            np.testing.assert_allclose(value, tc.evaluate(gradient, data), rtol=1e-12, atol=1e-12)
    for value, name in zip(compiled(data), "ABC"):
        numeric = _central(lambda x, name=name: float(tc.evaluate(f, {**data, name: x})), data[name])
        np.testing.assert_allclose(value, numeric, rtol=1e-6, atol=1e-6)


def test_the_generated_module_lays_the_cp_model_out_like_the_tensor_too():
    # to_python(shapes=) orients each pair as the compiled program does: the model's
    # statement makes a (3, 4, 5) array in memory order, not a transposed view of one
    f = tc.parse(CP, {"T": 3, "A": 2, "B": 2, "C": 2})
    gradients = [tc.gradient(f, name) for name in "ABC"]
    shapes = {"T": (3, 4, 5), "A": (3, 2), "B": (4, 2), "C": (5, 2)}
    source = tc.to_python(gradients, shapes=shapes)
    lines = [line.strip() for line in source.splitlines()]
    # T - M as a subtraction, or the model computed into the sum's buffer (_accumulate(M, ..., [T], ...))
    (difference,) = [
        line for line in lines if re.fullmatch(r"_s\d+ = T - _s\d+", line) or ("_accumulate(" in line and "[T]" in line)
    ]
    if "_accumulate(" in difference:
        model = difference.split("_accumulate(")[1].split(",")[0]
    else:
        model = difference.split(" - ")[1]
    (statement,) = [line for line in lines if line.startswith(f"{model} = ")]
    # made as a (3, 4, 5) array in memory order: no transpose after the reshape
    assert ".reshape((3, 4, 5))" in statement, statement
    assert ".transpose(" not in statement.split(".reshape((3, 4, 5))")[-1], statement
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the module under test
    rng = np.random.default_rng(10)
    data = {name: rng.standard_normal(shape) for name, shape in shapes.items()}
    for value, gradient in zip(namespace["f"](**data), gradients):
        np.testing.assert_allclose(value, tc.evaluate(gradient, data), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shared", [False, True])
def test_a_long_sum_is_searched_in_linear_work(shared, monkeypatch):
    # every summand tried against the others sharing an operand with it, not against all:
    # 2,000 summands read nothing in common (or all x): the search was quadratic (3.7 s)
    calls = [0]
    original = factoring._match

    def counted(*args):
        calls[0] += 1
        return original(*args)

    monkeypatch.setattr(factoring, "_match", counted)
    counts = []
    for k in (200, 400):
        vector = "x" if shared else "x{j}"
        src = " + ".join(f"A{j} *(ij,j->i) {vector.format(j=j)}" for j in range(k))
        orders = {**{f"A{j}": 2 for j in range(k)}, **{vector.format(j=j): 1 for j in range(k)}}
        shapes = {name: (3, 4) if name.startswith("A") else (4,) for name in orders}
        calls[0] = 0
        tc.compile(tc.parse(src, orders)).cost(shapes)
        counts.append(calls[0])
    assert counts[1] <= 4 * 400 and counts[1] <= 2.2 * max(counts[0], 1), counts  # a few per summand


@pytest.mark.parametrize("n", [2, 5])
def test_a_factored_sum_may_read_an_input_the_plan_meets_later(n):
    """``y'inv(K)y + l'y`` is factored into ``(inv(K)y + l)'y``: the rewritten first
    product reads ``l``, an input whose step comes after it.  Its shape is known from
    the start (the fused second call raised "the binder bound no record of the term"
    when the binder had read the input's shape as ``()``; found by the fuzz campaign)."""
    expr = tc.parse("y *(i,ij->j) inv(K) *(j,j->) y + l *(j,j->) y + log(det(K))", {"K": 2, "y": 1, "l": 1})
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n))
    values = {"K": a @ a.T + n * np.eye(n), "y": rng.standard_normal(n), "l": rng.standard_normal(n)}  # det K > 0
    expected = tc.evaluate(expr, values)
    run = tc.compile(expr)
    assert np.isclose(run(values), expected) and np.isclose(run(values), expected)  # the loop, then fused
    namespace: dict = {}
    exec(tc.to_python(expr, shapes={k: np.shape(v) for k, v in values.items()}), namespace)  # noqa: S102
    assert np.isclose(namespace["f"](**values), expected)
    grad = tc.compile(tc.gradient(expr, "l"))
    assert np.allclose(grad(values), values["y"]) and np.allclose(grad(values), values["y"])
