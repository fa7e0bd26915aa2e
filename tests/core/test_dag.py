"""The DAG invariants: interning (equal structure is the same object), canonical
forms, sharing of common subexpressions, immutability."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.core import nodes as N
from tenscalc.core.nodes import topological

ORDERS = {"A": 2, "B": 2, "X": 2, "x": 1, "y": 1, "a": 1, "b": 1, "c": 0}


def P(text: str):
    return tc.parse(text, ORDERS)


def test_parsing_twice_gives_the_identical_root():
    text = "log(exp(-(y *(i,i->i) (X *(ij,j->i) x))) + 1) *(i,i->) 1"
    first = P(text)
    second = P(text)
    assert first is second
    assert P("x") is P("x") is N.var("x", 1)


def test_common_subexpression_is_one_node():
    e = P("(X+1) + X *(ij,ij->ij) (X+1)")
    X = N.var("X", 2)
    one = N.const(1, 2, X.dims)  # the 1 takes X's dimensions from its context
    x_plus_1 = [n for n in topological(e) if n.op == "add" and set(n.children) == {X, one}]
    assert len(x_plus_1) == 1
    # and the product really uses that very node
    product = next(n for n in topological(e) if n.op == "mul")
    assert product.children == (X, x_plus_1[0])
    assert x_plus_1[0] in e.children
    # nodes: X, 1, X+1, X*(X+1), the sum
    assert tc.count_nodes(e) == 5
    assert tc.count_edges(e) == 2 + 2 + 2


def test_every_node_is_reached_once():
    e = P("(x + y) *(i,i->) (x + y) + sin(x + y) *(i,i->) (x + y)")
    nodes = topological(e)
    assert len(nodes) == len({id(n) for n in nodes})
    assert sum(1 for n in nodes if n.op == "var") == 2
    # children come before their parents
    position = {id(n): k for k, n in enumerate(nodes)}
    for n in nodes:
        for child in n.children:
            assert position[id(child)] < position[id(n)]
    assert nodes[-1] is e


def test_index_renaming_is_canonical():
    assert P("A *(ij,j->i) x") is P("A *(ab,b->a) x")
    assert P("A *(ij,j->i) x") is P("A *(zy,y->z) x")
    assert P("A *(ik,kj->ij) B") is P("A *(ab,bc->ac) B")
    assert P("A *(ij,j->i) x") is not P("A *(ij,i->j) x")  # different meaning, different node


def test_sums_are_commutative():
    assert P("a + b") is P("b + a")
    assert P("a + b + x") is P("x + b + a") is P("b + x + a")
    assert P("a - b") is P("-b + a")


def test_difference_is_a_sum_with_a_negated_term():
    e = P("a - b")
    assert e is P("a + -b")
    assert e.op == "add"
    assert dict(zip(e.children, e.arg)) == {N.var("a", 1): 1, N.var("b", 1): -1}


def test_double_negation_disappears():
    assert P("--x") is P("x")
    assert P("-(-x)") is P("x")
    assert P("x - -y") is P("x + y")
    neg = P("-x")
    assert neg.op == "add" and neg.children == (P("x"),) and neg.arg == (-1,)


def test_int_and_float_constants_are_different_nodes():
    assert N.const(1) is not N.const(1.0)
    assert P("x + 1") is not P("x + 1.0")
    assert P("x + 1.0") is P("x + 1.")
    assert N.const(1, 1) is not N.const(1, 0)  # the order is part of a constant


def test_signed_zeros_and_nan_constants_are_kept_apart_and_nan_is_interned():
    # 0.0 == -0.0: one key made x / 0.0 print and evaluate as x / -0.0 while a -0.0 lived
    negative = N.const(-0.0)
    assert N.const(0.0) is not negative and str(negative) == "-0.0"
    x = tc.var("x", 1)
    quotient = x / 0.0
    assert str(quotient) == "x / 0.0"
    with np.errstate(divide="ignore"):
        assert tc.evaluate(quotient, x=np.ones(2)).tolist() == [np.inf, np.inf]
        assert tc.compile(quotient)(x=np.ones(2)).tolist() == [np.inf, np.inf]
        assert tc.evaluate(x / -0.0, x=np.ones(2)).tolist() == [-np.inf, -np.inf]
    assert x * 0.0 is not x * -0.0 and x + 0.0 is not x + -0.0
    # nan != nan: without one key for every NaN no NaN constant was ever found again
    assert N.const(float("nan")) is N.const(float("nan")) is N.const(-float("nan"))
    assert x * float("nan") is x * float("nan")
    assert N.const(float("nan")) is not N.const(0.0)


def test_nodes_are_immutable():
    e = P("A *(ij,j->i) x")
    for attribute, value in (("op", "add"), ("children", ()), ("arg", None), ("order", 3), ("new", 1)):
        with pytest.raises(AttributeError):
            setattr(e, attribute, value)
    assert isinstance(e.children, tuple)
    assert e.op == "mul" and e.order == 1


def test_node_attributes_cannot_be_deleted():
    # a private node, so that the bug cannot corrupt nodes other tests use
    e = N.func("tanh", N.var("only_in_the_delattr_test", 1))
    with pytest.raises(AttributeError):
        del e.op


def test_variables_property_is_a_copy():
    e = P("A *(ij,j->i) x + y")
    found = e.variables
    assert found == {"A": 2, "x": 1, "y": 1}
    assert list(found) == ["A", "x", "y"]  # sorted by name
    found["z"] = 3
    assert e.variables == {"A": 2, "x": 1, "y": 1}


def test_serial_numbers_are_stable_and_increasing():
    a = N.var("fresh_serial_a", 1)
    b = N.func("sin", a)
    assert b.serial > a.serial
    assert N.var("fresh_serial_a", 1).serial == a.serial


def test_pickle_and_copy_keep_interning():
    e = P("log(det(X)) *(,i->i) x + y")
    assert pickle.loads(pickle.dumps(e)) is e
    assert copy.copy(e) is e
    assert copy.deepcopy(e) is e


def test_hash_and_equality_are_identity_and_cheap():
    e = P("A *(ij,j->i) x")
    assert e == P("A *(ab,b->a) x")
    assert e != P("A *(ij,i->j) x")
    assert {e: 1}[P("A *(ab,b->a) x")] == 1
    # a deeply shared DAG (2^60 paths) hashes and compares in constant time
    node = N.var("x", 1)
    for _ in range(60):
        node = N.add((node, N.func("sin", node)))
    assert hash(node) == hash(node)
    assert node == node
    assert tc.count_nodes(node) == 1 + 2 * 60


def test_canonical_order_of_sums_is_deterministic_across_processes():
    script = (
        "import tenscalc as tc; "
        "print(str(tc.parse('a + b + x + c *(,i->i) y + sin(a)', {'a': 1, 'b': 1, 'x': 1, 'y': 1, 'c': 0})))"
    )
    outputs = set()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=root)
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
        outputs.add(result.stdout)
    assert len(outputs) == 1


def test_invalid_nodes_are_refused_at_construction():
    x, A = N.var("x", 1), N.var("A", 2)
    with pytest.raises(tc.SemanticError):
        N.add((x, A))
    with pytest.raises(tc.SemanticError):
        N.mul((A, x), ((0,), (0,)), (0,))  # spec too short for A
    with pytest.raises(tc.SemanticError):
        N.mul((A, x), ((0, 1), (1,)), (2,))  # output letter in no input
    with pytest.raises(tc.SemanticError):
        N.power(x, x)
    with pytest.raises(tc.SemanticError):
        N.inv(x)
    with pytest.raises(tc.SemanticError):
        N.det(x)
    with pytest.raises(tc.SemanticError):
        N.func("frobnicate", x)
    with pytest.raises(tc.SemanticError):
        N.delta(-1)
    with pytest.raises(tc.SemanticError):
        N.const(1, -1)
    with pytest.raises(tc.SemanticError):
        N.const("one", 0)


def test_every_node_kind_has_a_printer_and_an_evaluator():
    from tenscalc.interpreter import EVALUATORS
    from tenscalc.printing.text import TEXT_PRINTERS

    for kind in N.NODE_KINDS:
        assert kind in EVALUATORS, kind
        assert kind in TEXT_PRINTERS, kind
