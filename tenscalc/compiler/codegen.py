"""Generated code: a standalone NumPy/opt_einsum function for one or more expressions.

``to_python`` writes the source of a function that computes a list of
expressions (typically a value, its gradient and its Hessian) from arrays given as
keyword arguments.  The function needs only NumPy and opt_einsum, never tenscalc.
Without shapes it is the compiler's shape-free plan (:func:`.plan.build_plan`)
written out by :class:`_PlanWriter`: one statement per plan step (products fused
into one einsum per term, deltas absorbed into letters, shared work computed once),
each temporary deleted after the plan's last reader of it, sums added into one
buffer, and contractions along the compiler's memory-bounded path choice.  Lengths
are read from the arguments at run time, so the function takes any shapes.  A
constant-only step is written from the steps of its own plan
(:func:`.plan.build_constant_plan`), banded steps from ``tc.compile``'s band
decision (:func:`.program.band_decision`), laid out at run time, and the sums
``tc.compile`` writes into one buffer from its decision (:func:`.accumulate.gather_sums`,
:func:`.accumulate.accumulates`) and its run-time text (``_accumulate``), and the
contractions several products share computed once, as its pairs
(:func:`.program._shared_pairs`).

Nothing the user writes reaches the source as text except the function name and
the variable names, and both must be plain identifiers (checked here), so the
source cannot be made to do anything but compute.  Numbers are written with
``repr`` of a Python ``int``/``float``; index specs are made of letters chosen here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from ..adjugate import ADJUGATE_SOURCE
from ..core.axes import AxisGraph, axis_graph
from ..core.checks import require_exprs
from ..core.nodes import Expr, topological
from ..core.text import einsum_letters as _letters
from ..core.text import short
from ..errors import TensCalcError
from ..limits import MAX_AXES
from ..printing.text import text_length, to_text
from ..simplifier import simplify_many
from .accumulate import Dense, accumulates, gather_sums, part_lists, parts
from .banded import BAND_SOURCE, BandStep
from .cholesky import Declared, declared
from .factoring import factor_shared, scale_broadcasts
from .generated import (
    ALIASES,
    RESULT_HELPER,
    check_function_name,
    dtype_line,
    input_lines,
    label_literal,
    python_names,
    read_aliases_only,
    shield_function_name,
    signature,
)
from .numpy_names import numpy_call
from .plan import Term, step_reads
from .program import (
    DP_MAX_OPERANDS,
    PROPORTION,
    ShapeResolver,
    _core_shape,
    _core_term,
    _Pair,
    _read_structure,
    _shared_pairs,
    _structured_slots,
    band_decision,
    choose_path,
    fold_squares,
    step_shape,
)
from .terms import EMPTY_SUM_SOURCE, inside_sums

#: the generic code's contraction: the compiler's path choice (:func:`.program.choose_path`:
#: opt_einsum's ``auto``, or a ``dp``/``greedy`` path of fewer flops where ``auto`` would build
#: an intermediate far larger than the operands and the result, as ``branch-2`` does on a
#: 3-layer network's HVP), searched once per spec and shapes, as tc.compile does
CACHED_CONTRACT = f'''_expressions = {{}}


def _path(spec, shapes):
    """opt_einsum's ``auto`` path; from 4 operands its ``dp`` path ({DP_MAX_OPERANDS} operands at most,
    else ``greedy``) where that has fewer flops or ``auto`` builds an intermediate over {PROPORTION}
    times the largest operand or result."""
    auto = _contract_path(spec, *shapes, shapes=True, optimize="auto")
    if _len(shapes) < 4:
        return auto[0]
    other = _DynamicProgramming(minimize="combo") if _len(shapes) <= {DP_MAX_OPERANDS} else "greedy"
    candidates = [auto, _contract_path(spec, *shapes, shapes=True, optimize=other)]
    sizes = auto[1].size_dict
    largest = 1
    for letter in spec.split("->")[1]:
        largest *= sizes[letter]
    for shape in shapes:
        size = 1
        for n in shape:
            size *= n
        largest = max(largest, size)

    def key(candidate):
        info = candidate[1]
        return (info.largest_intermediate > {PROPORTION} * largest, float(info.opt_cost), info.largest_intermediate)

    return min(candidates, key=key)[0]


def _contract(spec, *operands):
    """opt_einsum's contract along :func:`_path`'s path, searched once per spec and shapes (512 kept)."""
    key = (spec, *[operand.shape for operand in operands])
    expression = _expressions.get(key)
    if expression is None:
        if _len(_expressions) >= 512:
            _expressions.clear()
        path = _path(spec, key[1:])
        expression = _expressions[key] = _contract_expression(spec, *key[1:], optimize=path)
    return expression(*operands)'''
#: the contraction of a module whose einsums have at most 3 operands (opt_einsum's ``auto``
#: path is then the compiler's choice too)
AUTO_CONTRACT = CACHED_CONTRACT[: CACHED_CONTRACT.index("def _path(")] + CACHED_CONTRACT[
    CACHED_CONTRACT.index("def _contract(") :
].replace("along :func:`_path`'s path", "(its own path)").replace("optimize=path", 'optimize="auto"').replace(
    "        path = _path(spec, key[1:])\n", ""
)
CONTRACT_IMPORTS = (
    "from opt_einsum import contract_expression as _contract_expression\n"
    "from opt_einsum import DynamicProgramming as _DynamicProgramming\n"
    "from opt_einsum import contract_path as _contract_path"
)
_CONTRACT_SPEC = re.compile(r'_contract(?:_late)?\("([^"]*)"')
_SAFE_TEXT = re.compile(r"[A-Za-z0-9_ .,()*+\-/^>]*")


def _index_text(items) -> str:
    """Python's basic index for slice items: ``1:, 0, ::2``."""
    from ..printing.text import slice_text

    return slice_text(items) if items else "()"


def _literal(value: int | float) -> str:
    """Python source for a number (only ints and floats reach here)."""
    if type(value) is int:
        # NumPy takes an int beyond 64 bits as an object (np.sin(10**300) fails): as a float it
        # is the value evaluate uses
        return repr(value) if abs(value) < 2**53 else repr(float(value))
    if type(value) is not float:
        raise TensCalcError(f"unexpected constant {value!r}")
    if math.isnan(value):
        return "_np.nan"
    if math.isinf(value):
        return "_np.inf" if value > 0 else "(-_np.inf)"
    return repr(value)


def _operand(text: str) -> str:
    """``text`` safe as an operand of ``*`` or unary ``-``: a constant's text can be a
    sum (``_np.exp(2) + _np.sin(1)``), which a bare ``factor * x`` would split."""
    return f"({text})" if " " in text or text.startswith("-") else text


@dataclass
class _Value:
    """A slot's value in the generated code: a Python expression (a temporary, a
    parameter or a literal) and the Python expressions of its axis lengths (None
    where unknown)."""

    text: str
    shape: tuple[str | None, ...]


class _Writer:
    """What writing the generated function needs besides the plan: the axis lengths read
    from the arguments, the Cholesky factors of declared inputs, the module around the
    statements (:meth:`source`)."""

    def __init__(self, roots: list[Expr], name: str, declared: Declared | None = None):
        self.roots = roots
        self.name = name
        self.declared = declared or Declared()
        self.factors: dict[str, str] = {}  # a declared positive-definite variable -> its factor's temporary
        self.unread: set[str] = set()  # temporaries to drop when nothing reads them (a det whose log reads the factor)
        self.lines: list[str] = []
        self.graphs: dict[Expr, AxisGraph] = {}  # node -> the axis graph that sizes it
        # id(graph) -> class -> "x.shape[k]" (an AxisGraph is a mutable dataclass: not hashable)
        self.sources: dict[int, dict[int, str]] = {}
        self.orders: dict[str, int] = {}
        self.checks: list[tuple[str, str]] = []
        self.names: dict[str, str] = {}  # variable -> its Python name (a keyword renamed)
        self.helpers: set[str] = set()  # helper functions the module defines (.source.HELPERS)

    # -- sizes -------------------------------------------------------------------------
    def bind_sizes(self) -> list[str]:
        """Which axis of which argument fixes each length; returns the parameters."""
        self.names = python_names(
            {name for root in self.roots for name, *_ in axis_graph(root).var_slots}
            | {node.arg[0] for node in topological(self.roots) if node.op == "var"}
        )
        for root in self.roots:
            graph = axis_graph(root)
            source: dict[int, str] = {}
            for var_name, order, axis, slot in graph.var_slots:
                self.orders[var_name] = order
                length = f"{self.names[var_name]}.shape[{axis}]"
                cls = graph.find(slot)
                if cls not in source:
                    source[cls] = length
                elif source[cls] != length:
                    self.checks.append((source[cls], length))
            self._derived_sources(graph, source)
            self.sources[id(graph)] = source
            for node in graph.nodes:
                self.graphs.setdefault(node, graph)
                if node.op == "var":
                    self.orders[node.arg[0]] = node.arg[1]
        unique: dict[frozenset, tuple[str, str]] = {}
        for pair in self.checks:
            unique.setdefault(frozenset(pair), pair)
        self.checks = list(unique.values())
        return sorted(self.orders)

    def _derived_sources(self, graph, source: dict[int, str]) -> None:
        """Lengths of sliced axes ("n - 1"), written from the axes they slice."""
        changed = True
        while changed:
            changed = False
            for slot, base, (start, stop, step) in graph.derived:
                cb, cls = graph.find(base), graph.find(slot)
                if cb not in source:
                    continue
                length = f"_len(_range({source[cb]})[{start}:{'' if stop is None else stop}:{step}])"
                if cls not in source:
                    source[cls] = length
                    changed = True
                elif source[cls] != length and (source[cls], length) not in self.checks:
                    self.checks.append((source[cls], length))

    def _shape(self, graph, classes) -> tuple[str | None, ...]:
        source = self.sources[id(graph)]
        return tuple(source.get(c) for c in classes)

    # -- statements --------------------------------------------------------------------
    def bind(self, text: str) -> str:
        temp = f"_t{len(self.lines)}"
        self.lines.append(f"{temp} = {text}")
        return temp

    def _factor(self, node: Expr | None) -> str | None:
        """The temporary holding the Cholesky factor of ``node`` where it is a variable
        declared positive definite (written at its first use), else None."""
        if node is None or node.op != "var" or node.arg[0] not in self.declared.pd:
            return None
        name = node.arg[0]
        if name not in self.factors:
            self.factors[name] = self.bind(f"_cholesky({self.names[name]}, {name!r})")
        return self.factors[name]

    # -- the module --------------------------------------------------------------------
    def source(self, params: list[str], results: list[_Value], single: bool, header: str) -> str:
        body: list[str] = []
        names = {name: self.names[name] for name in params}
        # only names starting with '_' are used below: a variable may be called `float`
        # or `ValueError`.  Complex input stays complex, as in evaluate; ints become floats.
        body.append(dtype_line(names))  # from the values as passed: a Python number is weak
        body += input_lines(names)
        if names:
            self.helpers.add("_numbers")
        for name, python in names.items():
            order = self.orders[name]
            body.append(f"if {python}.ndim != {order}:")
            axes = "1 axis" if order == 1 else f"{order} axes"
            body.append(f'    raise _ValueError(f"{name} must have {axes}, got shape {{{python}.shape}}")')
        for a, b in self.checks:
            body.append(f"if {a} != {b}:")
            body.append(f'    raise _ValueError(f"{a} ({{{a}}}) must equal {b} ({{{b}}})")')
        # the declarations, on the data: a factorised matrix by its factor, as tc.compile checks it
        for name in sorted(self.declared.symmetric & set(names) - set(self.factors)):
            self.helpers.add("_symmetric")
            word = "positive definite (pd)" if name in self.declared.pd else "symmetric"
            body.append(f"{names[name]} = _symmetric({names[name]}, {name!r}, {word!r})")
        texts = []
        for value in results:
            # _result: the inputs' dtype, and never an input itself (writing into a result
            # must not change the caller's array)
            text = value.text
            copy = text in names.values()
            texts.append(f"_result({'_np.array(' + text + ')' if copy else text}, _dtype)")
        keep = set(_TEMP.findall(" ".join(texts)))
        read = {temp for line in self.lines for temp in _TEMP.findall(line.partition(" = ")[2])} | keep
        lines = [line for line in self.lines if line.partition(" = ")[0] not in self.unread - read]
        body.extend(with_releases(lines, keep=keep))
        body.append(f"return {texts[0]}" if single else f"return {_tuple_text(texts)}")
        head, *reads = signature(self.name, names)
        # the path choice only where some einsum has 4 operands or more (else opt_einsum's own)
        searched = any(spec.count(",") >= 3 for spec in _CONTRACT_SPEC.findall("\n".join(body)))
        imports = ["import numpy as _np", CONTRACT_IMPORTS if searched else CONTRACT_IMPORTS.split("\n", 1)[0]]
        # a variable or the function may be named ValueError, len or range: the code uses private aliases
        imports += ["", ALIASES, RESULT_HELPER.rstrip()]
        if "_contract(" in "\n".join(body) or "_contract_late" in self.helpers:
            imports += ["", CACHED_CONTRACT if searched else AUTO_CONTRACT]
        if self.factors:  # the text tc.compile's closures run (.generated.CHOLESKY_HELPER)
            self.helpers.add("_cholesky")
        if "_adjugate(" in "\n".join(body):
            imports += ["", ADJUGATE_SOURCE.rstrip()]
        if self.helpers:
            from .source import HELPERS, helper_texts  # the same helpers to_python(shapes=) writes

            # _add_parts: the bound sums' text too (.sums)
            helpers = {**HELPERS, "_sum": SUM_HELPER, "_bands": BAND_SOURCE, "_contract_late": CONTRACT_LATE}
            imports += [text.rstrip() for text in helper_texts(self.helpers, helpers)]
        lines = [header, *imports, "", "", head]
        lines.extend("    " + line for line in reads + body)
        return shield_function_name(read_aliases_only("\n".join(lines) + "\n"), self.name)


#: the plan writer's sum of arrays: one buffer, as the compiled program adds into one
SUM_HELPER = '''
def _sum(parts):
    """The sum of ``coef * x`` over ``parts``, in order, added into the first array it makes
    (a new one where NumPy's promotion of a later summand needs it: complex after real); an
    ``x`` marked ``mine`` is dead after the sum: it is scaled in place, and may hold the sum."""
    acc, fresh = None, False
    for coef, x, mine in parts:
        scalable = mine and coef not in (1.0, -1.0) and _np.result_type(x, coef) == x.dtype
        if acc is None:
            if scalable:
                x *= coef
                acc, fresh = x, True
            else:
                acc = x if coef == 1.0 else (-x if coef == -1.0 else coef * x)
                fresh = mine or coef != 1.0
        elif fresh and _np.shape(x) == acc.shape and _np.result_type(acc, x) == acc.dtype:
            if coef == 1.0:
                acc += x
            elif coef == -1.0:
                acc -= x
            elif scalable:
                x *= coef
                acc += x
            else:
                acc += coef * x
        else:
            acc = acc + x if coef == 1.0 else (acc - x if coef == -1.0 else acc + coef * x)
            fresh = True
    return acc'''


class _PlanWriter(_Writer):
    """Writes the compiler's shape-free plan (:func:`.plan.build_plan`): one statement per
    plan step, in the plan's order, with the plan's decisions (products fused into one
    einsum per term, deltas absorbed into letters, shared subexpressions computed once)
    and its liveness (a slot is deleted after its last reader, as the compiled program
    releases it).  Lengths are read from the arguments (``x.shape[k]``).  A constant-only
    step (or a term's constant operand) is written from the steps of its own plan
    (:func:`.plan.build_constant_plan`, its numbers and deltas folded) by a
    :class:`_ConstantWriter`."""

    #: compile's sums gathered into one product step (:func:`.accumulate.gather_sums`): the
    #: summand products it took (never computed), and each step's shape at the lengths the
    #: decisions were taken at (None: none taken)
    gathered: frozenset[int]
    probe: list[tuple[int, ...]] | None
    nodes: list[tuple[int, ...]] | None  # the steps' nodes' shapes there (a factored step's differs)
    lengths: dict[int, str]  # a probe length -> its text
    #: tc.compile's diagonal steps (:func:`.program._structured_slots`): slot -> its pattern;
    #: the slot holds its diagonal core, its readers read the core, an output is written
    #: out densely when handed out
    structured: dict[int, tuple[int, ...]]
    diagonal: dict[int, str]
    #: tc.compile's shared pairs (:func:`.program._shared_pairs`): the pairs written before each
    #: step, the pair slots dead after each step, and the product steps rewritten to read them
    first_pairs: dict[int, list[_Pair]]
    pair_release: dict[int, list[int]]
    rewritten: dict[int, Any]

    def __init__(self, roots: list[Expr], name: str, declared: Declared | None = None):
        super().__init__(roots, name, declared)
        from .plan import build_plan

        plan = build_plan(roots)
        decisions = _binder_decisions(roots, plan)
        self.bind_sizes()  # the lengths' texts (bind_sizes is idempotent: to_python calls it again)
        lengths = self._length_texts(plan, decisions)
        if lengths is None:  # a factored step of lengths no axis names alone: not factored
            decisions = _binder_decisions(roots, plan, factor=False)
        self.lengths = lengths or {}
        self._start(decisions.plan, decisions.bands, "_s")
        self.gathered, self.probe, self.nodes = decisions.gathered, decisions.dense, decisions.nodes
        self.rewritten = decisions.rewritten
        self.unpaired = _unpaired(decisions.plan, decisions.rewritten)
        for pair in decisions.pairs:  # computed before their first reader, released after their last
            self.first_pairs.setdefault(pair.first, []).append(pair)
            self.pair_release.setdefault(pair.last, []).append(pair.slot)
        if self.probe is not None:  # where compile's other decisions were taken (its order: after the sums)
            self.structured = _structured_slots(self.plan)
            self.diagonal = {slot: eq for slot, eq in self.diagonal.items() if slot not in self.structured}

    def _start(self, plan, bands, prefix: str) -> None:
        """The state of writing ``plan``: its slots named ``prefix`` + index, ``bands`` its
        band decision (:func:`_binder_decisions`)."""
        self.plan = plan
        self.prefix = prefix
        self.slots: dict[int, _Value] = {}
        self.constant_slots: set[int] = set()
        self.after_step: list[str] = []  # constants' names a step read, deleted after it
        self.unwritten: set[int] = set()  # steps not computed (a pd input's det read by its log only)
        self.readers: dict[int, list[int]] = {}
        for step in self.plan.steps:
            for slot in step_reads(step):
                self.readers.setdefault(slot, []).append(step.index)
        #: tc.compile's band decision (:func:`.program.band_decision`): the banded slots, those
        #: also read densely (a dense twin written once), and every banded step's recipe
        self.banded, self.twins, self.band_steps = bands
        self.band_names: dict[int, str] = {}  # banded slot -> the name of its (bands, values) pair
        #: product steps written as a diagonal matrix's core (slot -> the einsum reading that
        #: diagonal), where every reader embeds it into a sum: never a dense n x n array
        self.diagonal = {
            slot: eq for slot in self.readers if slot not in self.banded and (eq := self._diagonal_eq(slot)) is not None
        }
        #: whether the step being written may be a view of a slot (a slice, a relabelling)
        self.view = False
        #: slots holding an array this function made that no other name views: a step
        #: after which one is dead may write into it (its summands, scaled in place)
        self.owned: set[int] = set()
        self.step = self.plan.steps[0]  # the step being written
        self.gathered, self.probe, self.nodes, self.structured = frozenset(), None, None, {}
        self.first_pairs, self.pair_release, self.rewritten = {}, {}, {}
        self.unpaired: dict[Term, Term] = {}  # a pair's reader -> the term as written (_unpaired)
        self.slot_nodes: dict[int, Expr] | None = None  # each slot's node, where an einsum asks (_inside)
        self.computed: set[int] = set()
        self.held = 0  # the small parts of sums written into one buffer, named _a + number

    def write(self) -> list[_Value]:
        plan = self.plan
        outputs = set(plan.outputs)
        # the arguments first: a sum written into one buffer writes its summands where the
        # first of them stood, which may come before an input another summand reads
        for step in plan.steps:
            if step.kind == "input":
                self.slots[step.index] = _Value(self.names[str(step.data)], self._node_shape(step.node))
        for step in plan.steps:
            if step.kind == "input":
                continue
            shape = self._node_shape(step.node)
            if step.index in self.gathered:  # a summand product its sum writes into its buffer
                continue
            for pair in self.first_pairs.get(step.index, ()):
                self._write_pair(pair, step.node)
            shape = self._step_shape(step, shape)
            if step.index in self.band_steps:
                self._write_bands(step, shape)
                if step.index in self.banded:
                    self._release(step)
                    continue
            rule = STEP_WRITERS.get(step.kind)
            if rule is None:  # pragma: no cover - every plan step kind has a rule
                raise AssertionError(f"no writer for plan steps of kind {step.kind!r}")
            step = self.rewritten.get(step.index, step)  # reading the shared pairs
            if self.structured:  # as the binder: a reader of diagonal slots reads their cores
                step = _read_structure(step, self.structured)
                pattern = self.structured.get(step.index)
                if pattern is not None:  # computed as its diagonal core only
                    shape = cast(Any, _core_shape(pattern, cast(Any, shape)))  # lengths as text
                    if step.kind == "product":
                        terms = cast("tuple[Term, ...]", step.data)
                        step = replace(step, data=tuple(_core_term(term) for term in terms))
            self.view, self.step = step.kind == "slice", step
            text = rule(self, step, shape)
            if text is None:  # not computed (a pd input's det whose log reads the factor)
                self.unwritten.add(step.index)
                continue
            name = f"{self.prefix}{step.index}"
            if self.view and step.index in outputs:
                text = f"_np.array({text})"  # a view of an argument: the caller's result is its own
            if self.view:  # it keeps its operand's memory alive: neither is ever written into
                self.owned.difference_update(step_reads(step))
            elif shape:  # every constant is an array of its own (its plan's, written for it alone)
                self.owned.add(step.index)
            self.lines.append(f"{name} = {text}")
            if self.after_step:  # the names of the constants it read, never read again
                self.lines.append("del " + ", ".join(self.after_step))
                self.after_step = []
            self.slots[step.index] = _Value(name, shape)
            self._release(step)
        return [self._handed_out(slot) for slot in plan.outputs]

    def _length_texts(self, plan, decisions: _Decisions) -> dict[int, str] | None:
        """Each probe length's text (``x.shape[0]``), where a rewritten step's shape is not its
        node's (:func:`.factoring.factor_shared`'s inner sums); None where one is unknown."""
        if decisions.dense is None or decisions.nodes is None:
            return {}
        texts: dict[int, set[str | None]] = {}
        for step, lengths in zip(plan.steps, decisions.nodes):
            for length, text in zip(lengths, self._node_shape(step.node)):
                texts.setdefault(length, set()).add(text)
        for dense, node in zip(decisions.dense, decisions.nodes):
            if dense != node and any(len(texts.get(n, ())) != 1 or None in texts[n] for n in dense):
                return None
        unique = {length: found.pop() for length, found in texts.items() if len(found) == 1}
        return {length: text for length, text in unique.items() if text is not None}

    def _step_shape(self, step, shape: tuple[str | None, ...]) -> tuple[str | None, ...]:
        """The lengths of what ``step`` computes: its node's, unless the binder's rewrites
        gave it another shape (a factored inner sum)."""
        if self.probe is None or self.nodes is None or self.probe[step.index] == self.nodes[step.index]:
            return shape
        return tuple(self.lengths[n] for n in self.probe[step.index])

    def _handed_out(self, slot: int) -> _Value:
        """The value of output ``slot``: a diagonal step's core written out densely (as
        ``tc.compile`` does when it hands it out, after every other step)."""
        value = self.slots[slot]
        pattern = self.structured.get(slot)
        if pattern is None:
            return value
        self._helper("_write_diagonal")
        node = self.plan.steps[slot].node
        shape = self._node_shape(node)
        eq = _letters(pattern) + "->" + _letters(tuple(dict.fromkeys(pattern)))
        return _Value(f"_write_diagonal({value.text}, {eq!r}, {_shape_text(node, shape)})", shape)

    def _write_pair(self, pair: _Pair, node: Expr) -> None:
        """``_sK = `` shared pair ``K`` (:func:`.program._shared_pairs`): its two operands'
        contraction, its lengths theirs (``node``: its first reader's, for messages only)."""
        lengths: dict[int, str | None] = {}
        for slot, spec in pair.term.operands:
            lengths.update(zip(spec, self.slots[slot].shape))
        shape = tuple(lengths[letter] for letter in pair.term.out)
        text, _ = self._plan_term(pair.term, node, shape)  # two operands: a new array
        name = f"{self.prefix}{pair.slot}"
        self.lines.append(f"{name} = {text}")
        self.slots[pair.slot] = _Value(name, shape)
        if shape:
            self.owned.add(pair.slot)

    def _release(self, step) -> None:
        """``del`` the slots (dense arrays, bands and shared pairs) dead after ``step``, as the
        binder releases them."""
        inputs, outputs = set(self.plan.inputs.values()), set(self.plan.outputs)
        dead = [f"{self.prefix}{slot}" for slot in self.pair_release.get(step.index, ())]
        for slot in self.plan.release[step.index]:
            if slot in self.band_names:
                dead.append(self.band_names.pop(slot))
            if slot in self.slots and slot not in inputs and slot not in outputs:
                dead.append(f"{self.prefix}{slot}")
        if dead:
            self.lines.append("del " + ", ".join(dead))

    # -- banded steps (.banded: written from compile's decision, laid out at run time) --------
    def _write_bands(self, step, shape: tuple[str | None, ...]) -> None:
        """``_bK = `` the bands of banded step ``K``, from its recipe (:data:`.banded.Recipe`);
        its dense value too where another step reads it densely or it is a result."""
        self._helper("_bands")
        (first, *_), recipe = self.band_steps[step.index].recipe, self.band_steps[step.index].recipe
        if first[0] == "constant":
            text = self._band_tree(first[1], shape, step.node)
        else:
            parts = "".join(f"*{self._band_part(part, step, shape)}, " for part in recipe)
            text = f"_bands([{parts}])"
        name = f"_b{step.index}"
        self.lines.append(f"{name} = {text}")
        self.band_names[step.index] = name
        if step.index in self.banded and (step.index in self.twins or step.index in self.plan.outputs):
            self.lines.append(f"_s{step.index} = _bands_dense({name}, {_shape_text(step.node, shape)})")
            self.slots[step.index] = _Value(f"_s{step.index}", shape)
            self.owned.add(step.index)

    def _band_part(self, part: tuple, step, shape: tuple[str | None, ...]) -> str:
        """The text of one part of a banded step (a list of ``(band, value)``)."""
        kind, node = part[0], step.node
        if kind == "identity":
            return f"_bands_identity({shape[0]}, {_literal(float(part[1]))})"
        if kind == "diagonal":
            core, _ = self._plan_term(part[1], node, shape[:1])
            return f"_bands_diagonal({core})"
        if kind == "scaled":
            _, source, vectors, factor, transpose = part
            if isinstance(source, int):
                banded = self.band_names[source]
            else:  # a constant of the term's operand shape
                banded = self._band_tree(source[1], shape[::-1] if transpose else shape, node)
            read = "".join(f"({self._read(slot)}, {on_rows}), " for slot, on_rows in vectors)
            return f"_bands_scaled({banded}, ({read}), {_literal(float(factor))}, {transpose})"
        if kind == "placed":
            _, slot, items, coef = part
            where = "None" if items is None else _items_text(items)
            return (
                f"_bands_placed({self.band_names[slot]}, {where}, {_shape_text(node, shape)}, {_literal(float(coef))})"
            )
        _, slot, items = part  # clipped
        source = self._node_shape(self.plan.steps[slot].node)
        return f"_bands_clipped({self.band_names[slot]}, {_items_text(items)}, {_shape_text(node, source)})"

    def _band_tree(self, tree: tuple, shape: tuple[str | None, ...], node: Expr) -> str:
        """The text of a banded constant's ``(bands, values)`` of ``shape`` from its tree."""
        kind = tree[0]
        if kind == "identity":
            return f"_bands(_bands_identity({shape[0]}, 1.0))"
        if kind == "sum":
            parts = "".join(
                f"*_bands_placed({self._band_tree(inner, shape, node)}, None, {_shape_text(node, shape)}, "
                f"{_literal(float(coef))}), "
                for coef, inner in tree[1]
            )
            return f"_bands([{parts}])"
        _, items, child, inner = tree
        child_shape = self._node_shape(child)
        banded = self._band_tree(inner, child_shape, child)
        if kind == "embed":
            return f"_bands(_bands_placed({banded}, {_items_text(items)}, {_shape_text(node, shape)}, 1.0))"
        return f"_bands(_bands_clipped({banded}, {_items_text(items)}, {_shape_text(child, child_shape)}))"

    def _node_shape(self, node: Expr) -> tuple[str | None, ...]:
        graph = self.graphs.get(node)
        if graph is None:  # pragma: no cover - every plan node is a node of the roots
            raise AssertionError("a plan node outside the expressions")
        return self._shape(graph, graph.classes(node))

    def _read(self, slot: int) -> str:
        return self.slots[slot].text

    def _mine(self, slot: int) -> bool:
        """Whether the step being written may overwrite ``slot``: an array this function
        made, no view of it kept, read once by this step and dead after it."""
        step = self.step
        return (
            slot in self.owned
            and slot in self.plan.release[step.index]
            and slot not in self.plan.outputs
            and step_reads(step).count(slot) == 1
        )

    def _helper(self, name: str) -> None:
        self.helpers.add(name)

    # -- steps -------------------------------------------------------------------------
    def _plan_constant(self, step, shape) -> str:
        self.constant_slots.add(step.index)
        return self._constant(step.node, shape)

    def _constant(self, node: Expr, shape: tuple[str | None, ...]) -> str:
        """The value of constant-only ``node``: a number or delta written out, anything else
        the name its own plan's steps leave it in (deleted after the step reading it)."""
        if node.op == "const":
            value = _literal(node.arg[0])
            return f"_np.full({_shape_text(node, shape)}, {value}, dtype=_dtype)" if node.order else value
        if node.op == "delta":
            if node.arg == 0:
                return "1.0"
            size = " * ".join(str(length) for length in shape[: node.arg])
            return f"_np.eye({size}, dtype=_dtype).reshape({_shape_text(node, shape)})"
        prefix = f"_c{len(self.lines)}_"  # unique: each constant's plan writes its statements first
        (value,) = _ConstantWriter(self, node, prefix).write()
        if value.text.startswith(prefix):  # its plan's output slot
            self.after_step.append(value.text)
        return value.text

    def _plan_func(self, step, shape) -> str:
        (arg,) = step.args
        det = self.plan.steps[arg]
        # log det from the factor, det computed or not (as tc.compile): finite where det overflows
        factor = self._pd_factor(det.args[0]) if step.data == "log" and det.kind == "det" else None
        if factor is not None:
            return f"_cho_det({factor}, True)"
        return numpy_call(str(step.data), self._read(arg))

    def _plan_pow(self, step, shape) -> str:
        base = self._read(step.args[0])
        node = self.plan.steps[step.args[0]].node
        if not node.order and not node.variables:  # may be a Python number: as NumPy's, 1 / 0 is inf
            base = f"_np.float64({base})"
        if len(step.args) == 2:
            return f"_np.power({base}, {self._read(step.args[1])})"
        e = step.data
        if e == 2:
            return f"{base} * {base}"
        if e == -1:
            return f"1.0 / {base}"
        return f"_np.power({base}, {_literal(cast(float, e))})"

    def _plan_inv(self, step, shape) -> str:
        factor = self._pd_factor(step.args[0])
        if factor is not None:
            return f"_cho_inv({factor})"
        self.helpers.add("_linalg")
        return f"_inv({self._read(step.args[0])}, {label_literal(step.node)})"

    def _plan_det(self, step, shape) -> str | None:
        factor = self._pd_factor(step.args[0])
        if factor is None:
            self.helpers.add("_linalg")
            return f"_det({self._read(step.args[0])}, {label_literal(step.node)})"
        readers = [self.plan.steps[k] for k in self.readers.get(step.index, ())]
        if (
            readers
            and all(r.kind == "func" and r.data == "log" for r in readers)
            and step.index not in self.plan.outputs
        ):
            return None  # only its log is read: computed from the factor there
        return f"_cho_det({factor}, False)"

    def _diagonal_eq(self, slot: int) -> str | None:
        """The einsum reading the diagonal of product ``slot`` where every term writes the same
        diagonal and every reader is a sum embedding it (only), else None."""
        step = self.plan.steps[slot]
        if step.kind != "product" or slot in self.plan.outputs:
            return None
        patterns = {_canonical_letters(term.out) for term in step.data}
        if len(patterns) != 1:
            return None
        (pattern,) = patterns
        distinct = tuple(dict.fromkeys(pattern))
        if len(distinct) == len(pattern):
            return None
        for reader in self.readers[slot]:
            items = self.plan.steps[reader].data if self.plan.steps[reader].kind == "add" else None
            if items is None or any(item.kind == "slot" and item.slot == slot for item in items):
                return None
        return _letters(pattern) + "->" + _letters(distinct)

    def _pd_factor(self, slot: int) -> str | None:
        """The Cholesky factor of the input in ``slot`` where it is declared positive definite
        (written before its first reader), else None."""
        step = self.plan.steps[slot]
        return self._factor(step.node) if step.kind == "input" else None

    def _plan_adj(self, step, shape) -> str:
        self.helpers.update(("_linalg", "_adjugate"))
        return f"_adj({self._read(step.args[0])}, {int(cast(int, step.data))}, {label_literal(step.node)})"

    def _plan_slice(self, step, shape) -> str:
        return f"{self._read(step.args[0])}[{_index_text(step.data)}]"

    def _plan_embed(self, step, shape) -> str:
        items, _dims = cast(tuple, step.data)
        self._helper("_embed")
        return f"_embed({self._read(step.args[0])}, _np.s_[{_index_text(items)}], {_shape_text(step.node, shape)})"

    def _plan_add(self, step, shape) -> str:
        items = step.data
        slots = {self._read(item.slot) for item in items if item.kind == "slot"}
        parts: list[str] = []
        scalar = 0.0
        for item in items:
            if item.kind == "slot":
                coef, text = item.coef, self._read(item.slot)
                term = text if abs(coef) == 1 else f"{_literal(float(abs(coef)))} * {_operand(text)}"
                if not parts:
                    parts.append(term if coef > 0 else f"-{_operand(term)}")
                else:
                    parts.append(f" + {term}" if coef > 0 else f" - {_operand(term)}")
            elif item.kind == "scalar" or (item.kind == "delta" and item.n == 0):
                scalar += item.coef
        text = "".join(parts)
        arrays = [item for item in items if item.kind == "slot"]
        scaled = len(arrays) == 1 and arrays[0].coef != 1 and self._mine(arrays[0].slot)  # scaled in place
        if shape and (len(arrays) >= 2 or scaled):  # one buffer, each summand added into it (no temporary per +)
            self._helper("_sum")
            pairs = [f"({_literal(float(it.coef))}, {self._read(it.slot)}, {self._mine(it.slot)})" for it in arrays]
            if scalar != 0:
                pairs.append(f"(1.0, {_literal(scalar)}, False)")
            text, scalar = f"_sum(({''.join(p + ', ' for p in pairs)}))", 0.0
        if scalar != 0 and text:
            text += f" + {_literal(scalar)}" if scalar > 0 else f" - {_literal(-scalar)}"
        elif not text:
            text = f"_np.full({_shape_text(step.node, shape)}, {_literal(scalar)}, dtype=_dtype)" if shape else ""
            text = text or _literal(scalar)
        # the embedded parts and diagonals, added into one buffer in the summands' order
        extras = []
        for item in items:
            coef = _literal(float(item.coef))
            if item.kind == "delta" and item.n > 0:
                eq = _letters(tuple(range(item.n)) * 2) + "->" + _letters(tuple(range(item.n)))
                extras.append(f"(None, (), {coef}, {eq!r})")
            elif item.kind == "embed":
                eq = self.diagonal.get(item.slot)  # a diagonal matrix held as its core
                key = f"_np.s_[{_index_text(item.items)}]"
                extras.append(f"({self._read(item.slot)}, {key}, {coef}, {eq if eq is None else repr(eq)})")
        if not extras:
            self.view = text in slots  # x + 0
            return text
        self._helper("_add_parts")
        fresh = text not in slots and bool(shape)  # an array this statement makes: added into in place
        return f"_add_parts({text}, {fresh}, {_shape_text(step.node, shape)}, ({''.join(e + ', ' for e in extras)}))"

    def _plan_product(self, step, shape) -> str:
        probe = None if self.probe is None else self.probe[step.index]
        diagonal = step.index in self.diagonal or step.index in self.structured
        if probe is not None and not diagonal and len(step.data) > 1 and len(probe) >= 2:
            return self._plan_sum(step, shape, probe)
        core = step.index in self.diagonal  # the diagonal matrix's core only (read by embeddings)
        written = [self._plan_term(term, step.node, shape, core) for term in step.data]
        self.view = len(written) == 1 and written[0][1]  # a sum of terms is a new array
        return " + ".join(text for text, _ in written)

    def _plan_sum(self, step, shape: tuple[str | None, ...], probe: tuple[int, ...]) -> str:
        """A sum of terms of 2 or more axes written into one buffer, as ``tc.compile`` writes it:
        its parts (:func:`.accumulate.parts`) through the binder's run-time ``_accumulate``
        where the binder's :func:`.accumulate.accumulates` says so, the small parts computed
        first, then the dense terms one at a time (each added into the first's array)."""
        node, terms = step.node, step.data
        found = parts(terms, probe) if accumulates(terms, probe) else [Dense(term) for term in terms]

        def held(term, lengths: tuple[str | None, ...]) -> str:
            name = f"_a{self.held}"
            self.held += 1
            self.lines.append(f"{name} = {self._plan_term(term, node, lengths)[0]}")
            self.after_step.append(name)
            return name

        lists = part_lists(found, shape, held, self._read, _literal)
        self._helper("_accumulate")
        buf = "None"
        for k, p in enumerate(p for p in found if isinstance(p, Dense)):
            text, view = self._plan_term(p.term, node, shape)
            if k == 0:
                buf = f"_a{self.held}"
                self.held += 1
                self.lines.append(f"{buf} = {f'_np.array({text})' if view else text}")
                self.after_step.append(buf)
            else:
                self.lines.append(f"{buf} = _add_into({buf}, {text})")
        if lists is None:
            return buf
        shape_text = _shape_text(node, shape)
        return f"_accumulate({buf}, {shape_text}, {lists}, _block_rows({shape_text}))"

    def _plan_term(self, term, node: Expr, shape: tuple[str | None, ...], core: bool = False) -> tuple[str, bool]:
        """One term's text (its diagonal ``core`` only, where asked), and whether it may be a
        view of an operand (a relabelling).  A term reading a shared pair that may move an
        operand into or out of a written sum (:func:`_unpaired`) is the term as written
        where an operand has an axis of length 0 (a sum over it is 0 whatever it holds)."""
        original = self.unpaired.get(term)
        text, view = self._term_text(term, node, shape, core)
        if original is None:
            return text, view
        written, _ = self._term_text(original, node, shape, core)
        reads = " + ".join(f"{self._read(slot)}.shape" for slot in dict.fromkeys(slot for slot, _ in original.operands))
        return f"({text} if 0 not in ({reads}) else {written})", False

    def _term_text(self, term, node: Expr, shape: tuple[str | None, ...], core: bool) -> tuple[str, bool]:
        """:meth:`_plan_term`'s text of ``term`` itself."""
        out = term.out
        if term.factor == 0:  # zero even against inf or nan, as in evaluate and compile
            if core:
                unique = tuple(dict.fromkeys(out))
                return f"_np.zeros({self._letters_shape(unique, out, node, shape)}, dtype=_dtype)", False
            return (f"_np.zeros({_shape_text(node, shape)}, dtype=_dtype)" if shape else "0.0"), False
        operands: list[tuple[str, tuple[int, ...]]] = [(self._read(slot), spec) for slot, spec in term.operands]
        after: list[str] = []  # order-0 constants: multiplied into the result after the contraction
        origins = list(range(len(operands)))  # each operand's position among the term's (Term.holders)
        for number, (constant, spec) in enumerate(term.constants):
            text = self._constant(constant, self._node_shape(constant))
            if not spec:
                after.append(_operand(text))
            elif len(spec) == constant.order:
                operands.append((text, spec))
                origins.append(len(term.operands) + number)
            else:  # pragma: no cover - a constant read at a shape not its own
                raise AssertionError("a constant read at another shape")
        present = {letter for _, spec in operands for letter in spec}
        factor = [_literal(float(term.factor))] if term.factor != 1 else []
        for letter, (ref, original) in dict(term.refs).items():  # lengths summed over constants only
            if letter not in present and letter not in out:
                factor.append(self._letter_length(ref, original))
        unique = tuple(dict.fromkeys(out))
        view = False
        if not operands:
            text = " * ".join([*factor, *after]) or "1.0"
            if unique:
                text = f"_np.full({self._letters_shape(unique, out, node, shape)}, {text}, dtype=_dtype)"
        else:
            text, view = self._contraction(operands, unique, self._inside(term, operands, unique, origins))
            if factor or after:
                text, view = " * ".join([text, *factor, *after]), False
            target = tuple(letter for letter in unique if letter in present)
            if len(target) != len(unique):  # output letters no operand has: broadcast
                index = ", ".join(":" if letter in present else "None" for letter in unique)
                lengths = self._letters_shape(unique, out, node, shape)
                text = f"_np.broadcast_to(_np.asarray({text})[{index}], {lengths})"
                view = True  # a read-only view of the core (an operand's own array where nothing is summed)
        if len(unique) != len(out) and not core:  # repeated output letters: the core written on a diagonal
            self._helper("_write_diagonal")
            names = _canonical_letters(out)
            eq = _letters(names) + "->" + _letters(tuple(dict.fromkeys(names)))
            text, view = f"_write_diagonal({text}, {eq!r}, {_shape_text(node, shape)})", False
        return text, view

    def _contraction(
        self,
        operands: list[tuple[str, tuple[int, ...]]],
        unique: tuple[int, ...],
        inside: dict[int, tuple[int, ...]] | None = None,
    ) -> tuple[str, bool]:
        """The plan's einsum of the operands (diagonals read first) giving the output's
        letters that some operand has, and whether it may be a view of the operand;
        ``inside`` (:meth:`_inside`): through ``_contract_late``, which places the order-0
        operands at a sum over an empty axis at run time."""
        names: dict[int, int] = {}
        for _, spec in operands:
            for letter in spec:
                names.setdefault(letter, len(names))
        present = set(names)
        target = [names[letter] for letter in unique if letter in present]
        texts, specs = [], []
        for text, spec in operands:
            renamed = tuple(names[letter] for letter in spec)
            distinct = tuple(dict.fromkeys(renamed))
            if len(distinct) != len(renamed):
                text = f"_np.einsum({_letters(renamed) + '->' + _letters(distinct)!r}, {text})"
            texts.append(text)
            specs.append(distinct)
        view = len(texts) == 1 and set(specs[0]) == set(target)  # a relabelling: NumPy may hand out a view
        if view and list(specs[0]) == target:
            return texts[0], True  # nothing to contract
        eq = ",".join(_letters(spec) for spec in specs) + "->" + _letters(tuple(target))
        if inside is None:
            return f'_contract("{eq}", {", ".join(texts)})', view
        self._helper("_contract_late")
        # a held letter no operand carries is summed outside this einsum (a count of its
        # length, :meth:`_letter_length`): the run-time rule reads only the einsum's own letters
        held = {k: _letters(tuple(names[letter] for letter in spec if letter in names)) for k, spec in inside.items()}
        return f'_contract_late("{eq}", {held!r}, {", ".join(texts)})', view

    def _inside(self, term, operands: list[tuple[str, tuple[int, ...]]], unique: tuple[int, ...], origins: list[int]):
        """For an einsum whose operands its summed letters do not all hold as written (two sums
        side by side, a factor outside a sum): each operand's position -> the letters whose sums
        hold it (:func:`.terms.inside_sums`), which ``_contract_late`` reads at run time with the
        rule every runner follows (:data:`.terms.EMPTY_SUM_SOURCE`); None for any other einsum
        (one written sum: an empty one is 0, as the einsum computes it)."""
        summed = {letter for _, spec in operands for letter in spec} - set(unique)
        if not summed:
            return None
        if self.slot_nodes is None:
            self.slot_nodes = {step.index: step.node for step in self.plan.steps}
            self.computed = {id(node) for node in self.slot_nodes.values()}
        inside = inside_sums(term, self.slot_nodes, self.computed)
        held = [inside.get(origin, ()) for origin in origins]
        if all(summed.issubset(letters) for letters in held):
            return None
        return dict(enumerate(held))

    def _letters_shape(self, unique, out, node: Expr, shape) -> str:
        """The shape text of the output's distinct letters (each one's first axis)."""
        lengths = tuple(shape[out.index(letter)] for letter in unique)
        return _shape_text(node, lengths)

    def _letter_length(self, ref: Expr, original: int) -> str:
        """The length of letter ``original`` of product ``ref`` (a summed letter no operand has)."""
        graph = self.graphs.get(ref)
        slots = graph.letter_slots.get(ref) if graph is not None else None
        if graph is None or slots is None or original not in slots:
            raise TensCalcError("cannot tell the length of a summed index: no axis of the expressions sizes it")
        text = self.sources[id(graph)].get(graph.find(slots[original]))
        if text is None:
            raise TensCalcError(
                "cannot tell the length of a summed index that only constants carry: no variable fixes it"
            )
        return text


def _unpaired(plan, rewritten: dict) -> dict:
    """The terms of ``rewritten`` (the product steps reading shared pairs,
    :func:`.program._shared_pairs`) whose term as written in ``plan`` its sums do not all hold
    alike -> that term: the pair was chosen at the probe's lengths, and where an axis is empty
    at run time it may move an operand into or out of a sum over it (``x (B A)`` for
    ``(x B) A``); ``tc.compile`` decides at each call's lengths and shares no pair there."""
    found = {}
    for index, step in rewritten.items():
        for old, new in zip(plan.steps[index].data, step.data):
            inside = inside_sums(old, None, ())
            summed = set().union(*[spec for _, spec in [*old.operands, *old.constants]]) - set(old.out)
            if old != new and len(old.holders) == len(inside) and not all(summed.issubset(h) for h in inside.values()):
                found[new] = old
    return found


#: the run-time side of :meth:`_PlanWriter._inside`: the rule's text and the contraction it places
CONTRACT_LATE = (
    EMPTY_SUM_SOURCE
    + '''

def _contract_late(spec, inside, *operands):
    """:func:`_contract` of ``spec``; at a sum over an empty axis the operands it holds as written
    (``inside``) are taken out, as :func:`_empty_sums` says: that sum is 0 whatever they hold,
    and the 0 multiplies the contraction of the others (an inf there: nan)."""
    held = _empty_sums(spec, [operand.shape for operand in operands], inside)
    if held is None:
        return _contract(spec, *operands)
    inputs, output = spec.split("->")
    terms = inputs.split(",")
    sizes = {}
    for term, operand in zip(terms, operands):
        sizes.update(zip(term, operand.shape))
    kept = [k for k in range(len(terms)) if k not in held]
    present = "".join([terms[k] for k in kept])
    result = _np.zeros([sizes[letter] for letter in output], dtype=_np.result_type(*operands))
    if kept:  # 0 times the others' contraction, along the output letters they carry
        core = _contract(",".join([terms[k] for k in kept]) + "->" + "".join([c for c in output if c in present]),
                         *[operands[k] for k in kept])
        result[...] = (core * 0.0)[tuple([slice(None) if c in present else None for c in output])]
    return result
'''
)


class _ConstantWriter(_PlanWriter):
    """Writes one constant-only node from the steps of its own plan
    (:func:`.plan.build_constant_plan`), into the statements of the function being
    written (:class:`_PlanWriter` ``parent``), its slots named ``prefix`` + index."""

    def __init__(self, parent: _PlanWriter, node: Expr, prefix: str):
        from .plan import build_constant_plan

        shared = ("roots", "name", "declared", "factors", "unread", "lines", "graphs", "sources", "orders")
        for attribute in (*shared, "checks", "names", "helpers"):  # the function's sizes, names and statements
            setattr(self, attribute, getattr(parent, attribute))
        self._start(build_constant_plan(node), (set(), set(), {}), prefix)


def _items_text(items: tuple) -> str:
    """Slice items ``((start, stop, step), ...)`` as source: ints and None only."""
    for item in items:
        if not all(part is None or type(part) is int for part in item):  # pragma: no cover - a plan's slices
            raise TensCalcError(f"unexpected slice {item!r}")
    return repr(tuple(tuple(item) for item in items))


@dataclass
class _Decisions:
    """What ``tc.compile`` decides when binding that the shape-free module takes from it."""

    plan: Any  # the plan with its sums gathered (:func:`.accumulate.gather_sums`)
    gathered: frozenset[int]  # the summand products the sums took
    dense: list[tuple[int, ...]] | None  # each step's shape at the probe lengths
    bands: tuple[set[int], set[int], dict[int, BandStep]]  # (:func:`.program.band_decision`)
    nodes: list[tuple[int, ...]] | None  # each step's node's shape at the probe lengths
    #: the shared pairs (:func:`.program._shared_pairs`) and the product steps rewritten to read them
    pairs: list[_Pair] = field(default_factory=list)
    rewritten: dict[int, Any] = field(default_factory=dict)


def _binder_decisions(roots: list[Expr], plan, factor: bool = True) -> _Decisions:
    """``tc.compile``'s sums written into one buffer (:func:`.accumulate.gather_sums`) and its
    band decision (:func:`.program.band_decision`) over the shape-free plan, in the binder's
    order, taken at lengths chosen here: each class of variable axes its own length, far from
    the others' (both decisions read lengths only to compare the axes' classes), so that no two
    classes' slices meet by chance; multiples of 2,520 first (``x[1::2]`` as long as
    ``x[::2]``), then odd ones (``x[1:]`` as long as some ``y``).  Neither (every step dense,
    every sum as the plan writes it) where no probe fits the expressions."""
    graph = axis_graph(roots[0] if len(roots) == 1 else roots)
    for first, step in _PROBES:
        lengths: dict[int, int] = {}
        shapes: dict[str, list[int]] = {}
        for name, order, axis, slot in graph.var_slots:
            length = lengths.setdefault(graph.find(slot), first + step * len(lengths))
            shapes.setdefault(name, [0] * order)[axis] = length
        try:
            resolver = ShapeResolver([graph], {name: tuple(shape) for name, shape in shapes.items()}, estimate=True)
            nodes = [step_shape(step, resolver) for step in plan.steps]
            # the binder's rewrites, in its order (.program.bind)
            rewritten, skip = fold_squares(plan)
            rewritten = scale_broadcasts(rewritten, skip)
            dense = list(nodes)
            if factor:
                rewritten, dense, skip = factor_shared(rewritten, dense, skip, choose_path, resolver.contractions)
            gathered, taken = gather_sums(rewritten, dense, skip)
            banded, twins, steps = band_decision(gathered, resolver, dense)
            # the shared pairs, over the slots the binder holds apart (diagonal cores, bands), as
            # bind takes them.  A pair is a rewrite of the plan (a contraction several terms make,
            # made once): its values hold at every length.  Whether it pays may depend on them
            # (_pair_key: its result no larger than its larger operand); the probe's decision is
            # taken for every length, as the bands' and the factoring's are.  Where the result's
            # axes are some of one operand's (a dot product, A x, an entrywise product: the
            # corpus' pairs) the test holds at every length; where they are not (the network
            # HVP's X vᵀ, (m, h) from (m, n) and (h, n): compile shares it where min(m, h) <= n)
            # the module shares it as the probe's lengths decide, a held intermediate where
            # compile would not hold one, in exchange for one contraction instead of several.
            # Compile's transposed slots (program._transposed_slots, a matrix product's memory
            # layout) are not taken: an opt_einsum result's layout is opt_einsum's (its GEMM hands
            # out a transposed view: the network HVP's shared (g, m) product is F-ordered whether
            # its spec is swapped and transposed back or not), so the swap would change nothing
            pairs, edits = _shared_pairs(gathered, dense, {**_structured_slots(gathered), **dict.fromkeys(banded, ())})
        except Exception:  # noqa: BLE001 - lengths the expressions refuse: the next ones
            continue
        return _Decisions(gathered, taken, dense, (set(banded), twins, steps), nodes, pairs, edits)
    return _Decisions(plan, frozenset(), None, (set(), set(), {}), None)


#: the lengths :func:`_binder_decisions` tries (the first class's, the step to the next class's)
_PROBES = ((2520 * 11, 2520 * 6), (1009, 997))


def _canonical_letters(spec: tuple[int, ...]) -> tuple[int, ...]:
    """``spec`` renamed in order of first appearance (letters within the einsum alphabet)."""
    names: dict[int, int] = {}
    return tuple(names.setdefault(letter, len(names)) for letter in spec)


#: plan step kind -> the plan writer's method giving the step's statement (``input``: none)
STEP_WRITERS: dict[str, Callable[[_PlanWriter, Any, tuple[str | None, ...]], str | None]] = {
    "constant": _PlanWriter._plan_constant,
    "product": _PlanWriter._plan_product,
    "add": _PlanWriter._plan_add,
    "func": _PlanWriter._plan_func,
    "pow": _PlanWriter._plan_pow,
    "inv": _PlanWriter._plan_inv,
    "det": _PlanWriter._plan_det,
    "adj": _PlanWriter._plan_adj,
    "slice": _PlanWriter._plan_slice,
    "embed": _PlanWriter._plan_embed,
}

_TEMP = re.compile(r"\b_t\d+\b")


def with_releases(lines: Sequence[str], keep: set[str]) -> list[str]:
    """``lines`` with each temporary deleted after the statement that reads it last
    (except those in ``keep``), so the generated function holds only the arrays it
    still needs, as the compiled program's liveness does.

    >>> with_releases(["_t0 = x * 2", "_t1 = _t0 + 1", "_t2 = _t1 * _t0"], keep={"_t2"})
    ['_t0 = x * 2', '_t1 = _t0 + 1', '_t2 = _t1 * _t0', 'del _t0, _t1']
    """
    last: dict[str, int] = {}
    for k, line in enumerate(lines):
        for temp in _TEMP.findall(line):
            last[temp] = k
    dead: dict[int, list[str]] = {}
    for temp, k in last.items():
        if temp not in keep:
            dead.setdefault(k, []).append(temp)
    out: list[str] = []
    for k, line in enumerate(lines):
        out.append(line)
        if k in dead:
            out.append("del " + ", ".join(sorted(dead[k], key=lambda t: int(t[2:]))))
    return out


def _shape_text(node: Expr, shape: tuple[str | None, ...]) -> str:
    if any(a is None for a in shape):
        what = short(node, 80) if text_length(node) < 400 else f"a node of kind {node.op}"
        raise TensCalcError(
            f"cannot tell the axis lengths of `{what}`: no variable fixes them "
            "(a constant or delta that is not combined with any variable axis)"
        )
    return _tuple_text(shape)


def _tuple_text(items) -> str:
    items = list(items)
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def _describe(exprs: list[Expr], name: str, single: bool) -> str:
    lines = [
        f"# Generated by tenscalc: {name}(...) returns " + ("the value of" if single else "a tuple with the values of")
    ]
    for k, e in enumerate(exprs):
        text = to_text(e) if text_length(e) < 2_000 else f"<{e.op} node of order {e.order}>"
        if len(text) > 150:
            text = text[:147] + "..."
        if not _SAFE_TEXT.fullmatch(text):  # never let odd text into the source
            text = f"<expression of order {e.order}>"
        lines.append(f"#   [{k}] {text}")
    lines.append("# It needs NumPy and opt_einsum only.")
    return "\n".join(lines)


def to_python(
    exprs: Expr | Sequence[Expr],
    name: str = "f",
    shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    assumptions: Mapping[str, Any] | None = None,
) -> str:
    """Source of a standalone function computing ``exprs`` with NumPy and opt_einsum.

    Parameters
    ----------
    exprs : Expr or sequence of Expr
        What to compute, e.g. ``[f, tc.gradient(f, "x"), tc.hessian(f, "x")]``.
    name : str
        The function's name (a plain Python identifier).
    shapes : dict, optional
        The shape of every variable (name -> tuple).  Given, the source is the
        compiler's program for these shapes (``tc.compile``'s plan: fused products,
        shared subexpressions, contraction paths searched now, each pairwise step
        written as a NumPy ``matmul`` or broadcast product), as fast as
        ``tc.compile``; it needs NumPy only and refuses arrays of other shapes.
        Without it the function works at any shape, through opt_einsum.
    assumptions : mapping, optional
        What the data is known to be, as for ``tc.compile`` (``{"K": "pd"}``, or a
        problem's ``.assumptions``): the expressions are simplified with the matrices
        declared ``symmetric``, ``psd``, ``pd`` or ``diagonal`` as their own
        transposes, the function refuses (``ValueError``) a value of one that is not
        symmetric, and the ``inv``, ``det`` and ``log(det)`` of a
        matrix declared ``pd`` read one Cholesky factor (refused where there is none;
        the inverse through SciPy's LAPACK where SciPy is installed).

    Returns
    -------
    str
        Python source defining ``name``.  The function takes every variable as a
        keyword-only argument and returns a tuple of arrays in the order of
        ``exprs`` (a single array when ``exprs`` is one expression).  Nodes shared
        by the expressions are computed once.  As with ``tc.compile``, other
        keyword arguments are accepted and ignored, a variable named like a Python
        keyword is passed as ``f(**{"lambda": value, ...})``, and the results have
        NumPy's promotion of the inputs' dtypes (float32 in, float32 out).

    Raises
    ------
    TensCalcError
        When ``name`` or a variable name is not a plain identifier (or the function
        name is a Python keyword), so that no text can be injected into the code.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    >>> source = tc.to_python([f, tc.gradient(f, "x")], name="quadratic")
    >>> namespace = {}
    >>> exec(source, namespace)
    >>> value, grad = namespace["quadratic"](x=[1.0, 2.0], A=np.eye(2))
    >>> float(value), grad.tolist()
    (5.0, [2.0, 4.0])
    >>> p = tc.parse_problem("declare K 2 pd y 1 expression y'*inv(K)*y + log(det(K)) derivative wrt K")
    >>> exec(tc.to_python([p.expr, p.derivative()], name="gp", assumptions=p.assumptions), namespace)
    >>> value, grad = namespace["gp"](K=2 * np.eye(2), y=[1.0, 1.0])  # one Cholesky factor for both
    >>> round(float(value), 12), np.round(grad, 12).tolist()  # 1 + log 4; inv(K) - inv(K) y yᵀ inv(K)
    (2.38629436112, [[0.25, -0.25], [-0.25, 0.25]])
    >>> namespace["gp"](K=-np.eye(2), y=[1.0, 1.0])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tenscalc.errors.EvaluationError: 'K' is declared positive definite (pd) but its value is not: its Cholesky ...
    """
    check_function_name(name)
    single = isinstance(exprs, Expr)
    roots = require_exprs(exprs, "to_python")
    if not roots:
        raise TensCalcError("to_python needs at least one expression")
    for root in roots:
        if not isinstance(root, Expr):
            raise TensCalcError(f"to_python needs tenscalc expressions, got {type(root).__name__}")
    structure = declared(assumptions, {n: order for root in roots for n, order in root.variables.items()})
    if structure.symmetric:  # as tc.compile: a declared symmetric matrix is its own transpose
        roots = simplify_many(list(roots), symmetric=sorted(structure.symmetric))
    widest = max(node.order for node in topological(roots))
    if widest > MAX_AXES:
        raise TensCalcError(f"a node of the expression has {widest} axes; NumPy arrays have at most {MAX_AXES}")
    if shapes is not None:
        from .given_shapes import lengths
        from .source import program_source

        python_names({n for root in roots for n, _ in root.varset})  # refuses names the code cannot hold
        header = _describe(roots, name, single).replace("It needs NumPy and opt_einsum only.", "It needs NumPy only.")
        words = {n: "positive definite (pd)" if n in structure.pd else "symmetric" for n in structure.symmetric}
        fixed = {variable: lengths(variable, shape) for variable, shape in shapes.items()}
        for variable in sorted(structure.symmetric & set(fixed)):  # else "the shapes do not fit" names others
            if len(set(fixed[variable])) > 1:
                raise TensCalcError(
                    f"to_python: '{variable}' is declared {words[variable]} but its shape "
                    f"{fixed[variable]} is not square"
                )
        return program_source(roots, name, fixed, single, header, words, structure.pd)
    header = _describe(roots, name, single)
    planned = _PlanWriter(roots, name, structure)
    params = planned.bind_sizes()
    return planned.source(params, planned.write(), single, header)
