"""The fused path: a bound NumPy program run as one generated Python function.

:meth:`.program.Program.run` calls each step's closure in a loop.  On programs of
small arrays that loop is a visible share of the time: the extended Rosenbrock
gradient at n = 1,000 is 8 steps on 500-entry arrays, ~9 µs of NumPy and ~5 µs of
Python around it.  :func:`fuse` writes the whole bound program as straight-line
source, compiled once per shape signature on its second call (the first call binds
and runs the loop: a function called once does not pay for compiling source):

* a step whose record describes it as elementwise (:class:`Chain`: NumPy ufunc calls on
  slots, numbers and its own temporaries), a basic-index view (:class:`View`) or a
  sum of parts tiling an empty array (:class:`Tiles`, each part computed straight
  into its strided view when only the sum reads it) is written inline (each op's
  description, :attr:`.lowered.Op.inline`, is read from its record by :mod:`.descriptions`);
* the ops of the kinds in :data:`WRITTEN` (contractions, a product's terms added in
  place, shared pairs, sums into one buffer, sums with broadcast, embedded or diagonal
  parts (from their :class:`.sums.SumPlan`), constants, slices, embeds, banded steps
  and their dense twins (:class:`BandSum`: a tuple of band-value expressions), ``inv``,
  ``det`` and ``adj``, Cholesky factors and their readers) are written by the writer of
  ``tc.to_python(shapes=)`` (:class:`.source.FusedOpSource`): the module's statements, no
  closure called;
* ``x^1`` (:class:`Same`) is the slot itself;
* every other step (a function that is no ufunc) is a call of its
  closure, as in the loop; an op described as :class:`Fresh` (a contraction's new
  array) or :class:`Terms` (a product's terms, added in place) is known to allocate its
  result;
* a ufunc's result goes into a buffer nobody needs any more instead of a new array
  (``out=``): a temporary of the same step, or a slot released at this step that
  the program allocated itself and that only allocating steps ever read (no view,
  band or other closure can hold an alias of it).  Arrays of 128 KiB and more are
  fresh pages from the system on most allocations; reusing them saves that.

The values are the closures' own: the same ufuncs on the same operands in the same
order (writing into a buffer changes where a result goes, not its bits).  The
fused function runs only when every input is a float64 array: the language's
functions map real numbers to real numbers, so every value is then float64 and an
``out=`` buffer never changes a dtype; other inputs (float32, complex) run the loop.

>>> import numpy as np, tenscalc as tc
>>> f = tc.parse("sum(100*(x[1::2] - x[::2].^2).^2 + (1 - x[::2]).^2)")
>>> run = tc.compile(tc.gradient(f, "x"))
>>> x = np.array([1.0, 2.0, 0.5, 0.0])
>>> run(x=x).tolist()  # the first call binds and runs the loop
[-400.0, 200.0, 49.0, -50.0]
>>> run(x=x).tolist()  # the second writes the fused function and runs it (by hand: -400·0.5·(0 - 0.25) - 2·0.5 = 49)
[-400.0, 200.0, 49.0, -50.0]
>>> print(run._last[1].fused_source)  # doctest: +ELLIPSIS
def _fused(arrays, like):
    _a0, = arrays
    if _a0.dtype is not _F64: return None
    ...
    env[3] = _u_multiply(env[1], env[1])
    env[4] = _u_subtract(env[2], env[3], out=env[3])
    ...
>>> run(x=np.array([1.0, 2.0, 0.5, 0.0], dtype=np.float32)).dtype  # the loop of closures
dtype('float32')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .backends import numpy_result
from .lowered import Op

__all__ = [
    "BandNumber",
    "BandRef",
    "BandScaled",
    "BandStretch",
    "BandSum",
    "BandTerm",
    "Call",
    "Chain",
    "Const",
    "Fresh",
    "Same",
    "Slot",
    "Temp",
    "Terms",
    "Tiles",
    "View",
    "Spelling",
    "band_stretch",
    "band_tuple",
    "band_value",
    "fresh_results",
    "fuse",
    "tiles_lines",
]

#: the op kinds the fused function writes with the writer of ``tc.to_python(shapes=)``
#: (:class:`.source.FusedOpSource`) where the op is no elementwise :class:`Chain` or
#: :class:`View`: a contraction, a product's terms, a pair several products share, a sum
#: into one buffer, any other sum (from its record, :class:`.sums.SumPlan`: a sum with
#: broadcast, embedded or diagonal parts), a constant, a slice, a part embedded in zeros, a banded step's band
#: values and their dense twin (and the dense value of a banded or diagonal result), and
#: ``inv``, ``det`` and ``adj`` (the text the closures run, :data:`.generated.LINALG_HELPER`),
#: a declared positive-definite matrix's Cholesky factor and the ``inv``, ``det`` and
#: ``log(det)`` read from it (the same, :data:`.generated.CHOLESKY_HELPER`)
WRITTEN = frozenset(
    {"product", "pair", "accumulate", "add", "constant", "slice", "embed", "band", "twin"}
    | {"inv", "det", "adj", "cholesky"}
)

#: programs with more operations than this keep the loop: compiling the source costs
#: ~50 µs per operation, which a few hundred calls of a large program repay
MAX_OPS = 2_000


@dataclass(frozen=True)
class Slot:
    """An operand read from a slot of the program."""

    index: int


@dataclass(frozen=True)
class Const:
    """A number operand."""

    value: float


@dataclass(frozen=True)
class Temp:
    """The result of an earlier call of the same :class:`Chain`."""

    index: int


Arg = Slot | Const | Temp


@dataclass(frozen=True)
class Call:
    """``ufunc(*args)``; ``op``: the Python operator the closure uses instead (``*``,
    ``/``, ``+``, ``-``), written as such on numbers, where NumPy's scalar arithmetic
    (not the ufunc) runs and names itself in warnings ("scalar divide")."""

    ufunc: np.ufunc
    args: tuple[Arg, ...]
    op: str | None = None


@dataclass(frozen=True)
class Chain:
    """Elementwise calls; the last one's result is the step's value (a new array)."""

    calls: tuple[Call, ...]


@dataclass(frozen=True)
class View:
    """``slot[key]`` (basic indexing: a view of the slot's array)."""

    slot: int
    key: tuple


@dataclass(frozen=True)
class Same:
    """The slot's array itself (``x^1``): nothing computed, no new array."""

    slot: int


@dataclass(frozen=True)
class Tiles:
    """An empty array of ``shape`` with ``coef * slot`` written at each ``key``; the
    keys cover every entry exactly once."""

    shape: tuple[int, ...]
    parts: tuple[tuple[int, float, tuple], ...]


@dataclass(frozen=True)
class Fresh:
    """A step whose closure returns an array nobody else holds (a contraction with at
    least one pairwise product: matmul, einsum or multiply allocate their result; at
    most a transposed view of it is returned).  The closure is called as it is; its
    value's buffer may be taken over once released, and its reads keep no alias."""


@dataclass(frozen=True)
class Terms:
    """A sum of terms' values, added in order (the terms of a fused product, each as its
    :class:`.records.TermRecord` says); ``fresh`` when the first one returns an array
    nobody else holds."""

    fresh: bool


# ---- banded steps (:mod:`.banded`): a slot holds a tuple of band values (arrays or numbers)

#: a band value's description: BandRef | BandNumber | BandScaled | BandStretch | BandTerm (below)
BandValue = Any


@dataclass(frozen=True)
class BandRef:
    """Band ``k`` of banded ``slot``."""

    slot: int
    k: int


@dataclass(frozen=True)
class BandNumber:
    """A band value known when binding (a number, or a constant's band)."""

    value: Any


@dataclass(frozen=True)
class BandScaled:
    """A band value (its description) times the stretches ``slot[key]`` of vectors, in
    order, then ``factor``."""

    value: BandValue
    stretches: tuple[tuple[int, slice], ...]
    factor: float


@dataclass(frozen=True)
class BandStretch:
    """Entries ``first:stop:every`` of a band value (its description; a number stays a number)."""

    value: BandValue
    first: int
    stop: int
    every: int


@dataclass(frozen=True)
class BandTerm:
    """A band value that is the dense value of the product term ``term`` (a diagonal's core
    vector): the closure runner computes it from ``bound``, a writer with its own spelling
    of product terms (:mod:`.source`) writes it from ``record``."""

    term: Any
    shape: tuple[int, ...]
    record: Any = None  # the term's record as the binder bound it (.terms.TermPlan)
    bound: Any = None  # the term as the closure runner reads it (.records.TermRecord)


@dataclass(frozen=True)
class BandSum:
    """A banded step: per band, the sum of its parts' values (their descriptions, left to right)."""

    groups: tuple[tuple[BandValue, ...], ...]


Inline = (
    Chain | View | Same | Tiles | Fresh | Terms | BandSum | BandNumber | BandRef | BandScaled | BandStretch | BandTerm
)
#: steps whose value is a new array that aliases none of the slots they read
ALLOCATING = (Chain, Tiles, Fresh, Terms)


def part_shape(tiles: Tiles, key: tuple) -> tuple[int, ...]:
    """The shape of ``key``'s part of a tiled array."""
    return np.empty(tiles.shape)[key].shape  # np.empty writes nothing: cheap at any size


# ---- the source of banded steps and tiled sums, shared by the fused function and
# ``tc.to_python(shapes=)`` (:mod:`.source`): each spells slots, keys and numbers its own way


@dataclass(frozen=True)
class Spelling:
    """How a source writer names what band and tile source refers to.

    ``slot``: a slot's value (a banded slot's: its tuple of band values); ``key``: a
    basic index; ``number``: a number or a constant's band values; ``term``: the value of
    a :class:`BandTerm`'s product term (None: a writer of no band values, tiles only);
    ``stretch``: the name of :func:`band_stretch`; ``multiply``: the name of ``np.multiply``.
    """

    slot: Callable[[int], str]
    key: Callable[[Any], str]
    number: Callable[[Any], str]
    stretch: str
    multiply: str
    term: Callable[[BandTerm], str] | None = None


def band_value(inline: BandValue, spell: Spelling) -> str:
    """An expression for the band value ``inline`` describes.

    >>> spell = Spelling(lambda s: f"env[{s}]", repr, repr, "_stretch", "_np.multiply")
    >>> band_value(BandScaled(BandRef(3, 1), ((2, slice(1, None)),), 2.0), spell)
    '((env[3][1] * env[2][slice(1, None, None)]) * 2.0)'
    """
    if isinstance(inline, BandRef):
        return f"{spell.slot(inline.slot)}[{inline.k}]"
    if isinstance(inline, BandNumber):
        return spell.number(inline.value)
    if isinstance(inline, BandScaled):
        expression = band_value(inline.value, spell)
        for slot, key in inline.stretches:
            expression = f"({expression} * {spell.slot(slot)}[{spell.key(key)}])"
        if inline.factor != 1:
            expression = f"({expression} * {spell.number(inline.factor)})"
        return expression
    if isinstance(inline, BandStretch):
        value = band_value(inline.value, spell)
        return f"{spell.stretch}({value}, {inline.first}, {inline.stop}, {inline.every})"
    if isinstance(inline, BandTerm) and spell.term is not None:
        return spell.term(inline)
    raise AssertionError(f"a band value this writer cannot spell: {inline!r}")


def band_tuple(step: BandSum, spell: Spelling) -> str:
    """The tuple of a banded step's band values: per band, its parts added left to right."""
    groups = [" + ".join(band_value(part, spell) for part in group) for group in step.groups]
    return f"({''.join(g + ', ' for g in groups)})"


def tiles_lines(
    tiles: Tiles, name: str, allocate: str | None, written: set[int], spell: Spelling, shape_of: Callable[[int], Any]
) -> list[str]:
    """Statements writing the tiled array ``name``: ``name = allocate`` (None: an earlier
    statement did), then each part not ``written`` yet by its producer copied in (scaled
    straight into its view when it has the part's shape)."""
    lines = [] if allocate is None else [f"{name} = {allocate}"]
    for slot, coef, key in tiles.parts:
        if slot in written:
            continue
        k, value = spell.key(key), spell.slot(slot)
        if coef == 1:
            lines.append(f"{name}[{k}] = {value}")
        elif tuple(shape_of(slot)) == part_shape(tiles, key):
            lines.append(f"{spell.multiply}({spell.number(coef)}, {value}, out={name}[{k}])")
        else:
            lines.append(f"{name}[{k}] = {spell.multiply}({spell.number(coef)}, {value})")
    return lines


def _tile_producers(
    ops: Sequence[Op],
    inlines: Sequence[Inline | None],
    shapes: Sequence[tuple[int, ...]],
    outputs: Sequence[int],
) -> dict[int, tuple[int, tuple]]:
    """op index -> (tiles op index, key) for elementwise steps whose value is only a
    part of a tiled array: they write it there themselves (no copy)."""
    readers: dict[int, int] = {}
    for op in ops:
        for slot in op.reads:
            readers[slot] = readers.get(slot, 0) + 1
    producer = {op.slot: i for i, op in enumerate(ops)}
    into: dict[int, tuple[int, tuple]] = {}
    for t, inline in enumerate(inlines):
        if not isinstance(inline, Tiles):
            continue
        for slot, coef, key in inline.parts:
            i = producer.get(slot)
            if (
                i is not None
                and i < t
                and coef == 1
                and isinstance(inlines[i], Chain)
                and readers.get(slot) == 1
                and slot not in outputs
                and tuple(shapes[slot]) == part_shape(inline, key)
            ):
                into[i] = (t, key)
    return into


class ChainWriter:
    """The statements of an elementwise :class:`Chain`: one writer for ``tc.compile``'s fused
    function (slots ``env[slot]``, ufuncs and numbers as names in its namespace, results
    into free buffers: its inputs are float64) and the module ``tc.to_python(shapes=)``
    writes (:mod:`.source`: its names, ``_np.<ufunc>``, no ``out=``: any dtype).

    >>> writer = ChainWriter([(3,), (3,)], lambda s: f"_s{s}", lambda u: f"_np.{u.__name__}", repr)
    >>> chain = Chain((Call(np.multiply, (Slot(0), Slot(0)), "*"), Call(np.subtract, (Slot(1), Temp(0)), "-")))
    >>> writer.lines("_s2", chain, [])
    ['_t0 = _np.multiply(_s0, _s0)', '_s2 = _np.subtract(_s1, _t0, out=_t0)', 'del _t0']
    >>> writer.lines("_s2", chain, [], reuse=False)
    ['_t0 = _np.multiply(_s0, _s0)', '_s2 = _np.subtract(_s1, _t0)', 'del _t0']
    """

    def __init__(
        self,
        shapes: Sequence[tuple[int, ...]],
        slot: Callable[[int], str],
        ufunc: Callable[[np.ufunc], str],
        number: Callable[[Any], str],
    ):
        self.shapes, self.slot, self.ufunc, self.number = shapes, slot, ufunc, number

    def lines(
        self, target: str | None, chain: Chain, reusable: list[int], into: str | None = None, reuse: bool = True
    ) -> list[str]:
        """``target = `` the chain's value, each call into a buffer free by then where one
        is (``reuse``: a temporary of the chain's, or a slot of ``reusable``, taken from
        it); ``into``: an array view the last call writes (the value is not kept then)."""
        lines: list[str] = []
        temp_shapes: list[tuple[int, ...]] = []
        taken: set[int] = set()  # temporaries whose buffer a later call took
        calls = chain.calls
        last = len(calls) - 1
        last_read = {arg: j for j, call in enumerate(calls) for arg in call.args}  # the latest call reading it
        for j, call in enumerate(calls):
            shape = np.broadcast_shapes(*[self._shape(arg, temp_shapes) for arg in call.args])
            out = into if j == last else None
            if reuse and shape != () and out is None:
                for arg in call.args:
                    if isinstance(arg, Temp) and last_read[arg] == j and arg.index not in taken:
                        if temp_shapes[arg.index] == shape:
                            out = f"_t{arg.index}"
                            taken.add(arg.index)
                            break
                else:
                    for arg in call.args:
                        if isinstance(arg, Slot) and arg.index in reusable and last_read[arg] == j:
                            if self.shapes[arg.index] == shape:
                                out = self.slot(arg.index)
                                reusable.remove(arg.index)
                                break
            operands = [self._arg(arg) for arg in call.args]
            if shape == () and call.op is not None and out is None:
                expression = (
                    f"({call.op} {operands[0]})" if len(operands) == 1 else f"({f' {call.op} '.join(operands)})"
                )
            else:
                args = ", ".join(operands if out is None else [*operands, f"out={out}"])
                expression = f"{self.ufunc(call.ufunc)}({args})"
            if j < last:
                lines.append(f"_t{j} = {expression}")
            elif target is None:
                lines.append(expression)
            else:
                lines.append(f"{target} = {expression}")
            temp_shapes.append(shape)
        if last > 0:  # a temporary left in a local would keep its array alive
            lines.append("del " + ", ".join(f"_t{j}" for j in range(last)))
        return lines

    def _shape(self, arg: Arg, temp_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        if isinstance(arg, Slot):
            return tuple(self.shapes[arg.index])
        if isinstance(arg, Temp):
            return temp_shapes[arg.index]
        return ()

    def _arg(self, arg: Arg) -> str:
        if isinstance(arg, Slot):
            return self.slot(arg.index)
        if isinstance(arg, Temp):
            return f"_t{arg.index}"
        return self.number(arg.value)


class _Writer:
    """The source of one fused function, and the names it needs."""

    def __init__(self, shapes: Sequence[tuple[int, ...]]):
        self.shapes = shapes
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {"_np": np, "_empty": np.empty}

    def name(self, prefix: str, value: Any) -> str:
        key = f"{prefix}{len(self.namespace)}"
        self.namespace[key] = value
        return key

    def ufunc(self, ufunc: np.ufunc) -> str:
        key = f"_u_{ufunc.__name__}"
        self.namespace.setdefault(key, ufunc)
        return key

    def chain(self, target: str | None, chain: Chain, reusable: list[int], into: str | None = None) -> None:
        """``target = `` the chain's value, each call into a buffer free by then where one
        is; ``into``: an array view the last call writes (the value is not kept then)."""
        writer = ChainWriter(self.shapes, lambda slot: f"env[{slot}]", self.ufunc, self.number)
        self.lines += writer.lines(target, chain, reusable, into=into)

    def tiles(self, target: str, tiles: Tiles, name: str, written: set[int]) -> None:
        """``target = `` the tiled array ``name`` (allocated here unless an earlier step
        did), each part not ``written`` yet by its producer copied in."""
        allocate = None if written else f"_empty({tiles.shape!r})"
        self.lines += tiles_lines(tiles, name, allocate, written, self.spelling, lambda slot: self.shapes[slot])
        self.lines.append(f"{target} = {name}")
        self.lines.append(f"del {name}")

    @property
    def spelling(self) -> Spelling:
        """Slots as ``env[slot]``; keys and numbers as names in the namespace (for tiles)."""
        return Spelling(
            slot=lambda slot: f"env[{slot}]",
            key=lambda key: self.name("_k", key),
            number=self.number,
            stretch=self.stretch(),
            multiply=self.ufunc(np.multiply),
        )

    def stretch(self) -> str:
        self.namespace["_stretch"] = band_stretch
        return "_stretch"

    def number(self, value: Any) -> str:
        """A finite number as a literal; anything else (inf, nan, a constant's band
        values) as a name in the namespace."""
        if isinstance(value, (int, float)) and math.isfinite(value):
            return repr(float(value))  # as the module writes it (.source.literal): float64 either way
        return self.name("_c", value)


def fuse(
    ops: Sequence[Op],
    shapes: Sequence[tuple[int, ...]],
    inputs: Sequence[int],
    outputs: Sequence[int],
    n_slots: int,
    densify: Mapping[int, Callable[[Any], Any]],
    program: Any = None,
    resolver: Any = None,
    op_source: Callable[..., Any] | None = None,
) -> tuple[Callable[[Sequence[Any], Any], tuple[Any, ...] | None], str] | None:
    """The lowered program ``ops`` as one function of the input arrays and the ``like``
    reference, returning the results (None when an input is not float64), with its
    source; None for programs over :data:`MAX_OPS` operations.  Given the bound
    ``program``, its ``resolver`` and ``op_source`` (:class:`.source.FusedOpSource`, the
    writer of ``tc.to_python(shapes=)``, handed in by the caller: :mod:`.source` reads this
    module's band and tile writers, so this module does not import it), the ops of the
    kinds in :data:`WRITTEN` are written by that writer: the same statements, no closure
    called (without it, those ops are calls of their closures)."""
    if len(ops) > MAX_OPS:
        return None
    inlines: list[Inline | None] = [op.inline for op in ops]
    # the slots only allocating steps read: their buffers can be taken over
    aliased: set[int] = set(outputs)
    for inline, op in zip(inlines, ops):
        if not isinstance(inline, ALLOCATING):  # a closure, a view or a band may keep an alias
            aliased.update(op.reads)
    owned: set[int] = set()  # slots holding an array this function allocated
    into = _tile_producers(ops, inlines, shapes, outputs)
    tiled: dict[int, set[int]] = {}  # tiles op -> the part slots their producers wrote
    writer = _Writer(shapes)
    writer.namespace.update(_F64=np.dtype(np.float64), _finish=numpy_result)
    source = None
    written: Callable[[Op], bool] = lambda op: False  # noqa: E731
    if op_source is not None and program is not None and program.bound_plan is not None:
        source = op_source(program, resolver, writer.namespace)
        steps = program.steps  # a log det read from a Cholesky factor is written too (a func step)
        written = lambda op: op.kind in WRITTEN or getattr(steps.get(op.slot), "factor", None) is not None  # noqa: E731
    params = [f"_a{k}" for k in range(len(inputs))]
    lines = writer.lines
    if params:
        lines.append(f"{', '.join(params)}, = arrays")
        # float64 only: every value is float64 then, and out= never changes a dtype
        lines.append(f"if {' or '.join(f'{p}.dtype is not _F64' for p in params)}: return None")
    lines.append(f"env = [None] * {n_slots + 1}")
    lines += [f"env[{slot}] = {param}" for slot, param in zip(inputs, params)]
    lines.append("env[-1] = like")
    for i, (op, inline) in enumerate(zip(ops, inlines)):
        fn, slot, dead = op.fn, op.slot, op.release
        target = f"env[{slot}]"
        if isinstance(inline, Chain):
            reusable = [s for s in dict.fromkeys(dead) if s in owned and s not in aliased and shapes[s] != ()]
            if i in into:  # written straight into its part of a tiled array
                t, key = into[i]
                parts = tiled.setdefault(t, set())
                tiles = inlines[t]
                assert isinstance(tiles, Tiles)
                if not parts:  # the first producer allocates it
                    lines.append(f"_o{t} = _empty({tiles.shape!r})")
                parts.add(slot)
                writer.chain(None, inline, reusable, into=f"_o{t}[{writer.name('_k', key)}]")
            else:
                writer.chain(target, inline, reusable)
                owned.add(slot)
        elif isinstance(inline, Tiles):
            writer.tiles(target, inline, f"_o{i}", tiled.get(i, set()))
            owned.add(slot)
        elif source is not None and written(op) and isinstance(inline, Terms):
            lines += source.terms_statements(op, inline.fresh)
            owned.add(slot)
        elif source is not None and written(op):
            statements, temps = source.statements(op)
            lines += statements
            if temps:
                lines.append("del " + ", ".join(temps))
            if isinstance(inline, Fresh):
                owned.add(slot)
        elif isinstance(inline, View):
            lines.append(f"{target} = env[{inline.slot}][{writer.name('_k', inline.key)}]")
        elif isinstance(inline, Same):
            lines.append(f"{target} = env[{inline.slot}]")
        else:  # its closure, as the loop calls it
            lines.append(f"{target} = {writer.name('_f', fn)}(env)")
            if isinstance(inline, (Fresh, Terms)):
                owned.add(slot)
        for released in dead:
            lines.append(f"env[{released}] = None")
            owned.discard(released)
    results = []
    for slot in outputs:
        if slot in densify and source is not None:  # a band's or diagonal core's dense value, as the module writes it
            results.append(f"_finish({source.result(slot)})")
        elif slot in densify:
            results.append(f"_finish({writer.name('_d', densify[slot])}(env[{slot}]))")
        elif slot in owned and shapes[slot] != ():  # an array allocated here: handed out as it is
            results.append(f"env[{slot}]")
        else:
            results.append(f"_finish(env[{slot}])")
    lines.append(f"return ({''.join(r + ', ' for r in results)})")
    text = "def _fused(arrays, like):\n" + "".join(f"    {line}\n" for line in lines)
    if source is not None:
        source.define_helpers()
    namespace = writer.namespace
    exec(compile(text, "<tenscalc fused program>", "exec"), namespace)  # noqa: S102 - source written above
    return namespace["_fused"], text


def fresh_results(
    ops: Sequence[Op],
    shapes: Sequence[tuple[int, ...]],
    outputs: Sequence[int],
    densify: Mapping[int, Callable[[Any], Any]],
) -> bool:
    """Whether every result is an array the program allocates, in the loop and in the
    fused function alike (an elementwise, tiled or contraction step's new array):
    the caller's check for results sharing memory with an input can be skipped."""
    allocating = {op.slot for op in ops if isinstance(op.inline, ALLOCATING)}
    return all(slot in allocating and slot not in densify and shapes[slot] != () for slot in outputs)


def band_stretch(value: Any, first: int, stop: int, every: int) -> Any:
    """Entries ``first:stop:every`` of a band value; a number stays a number."""
    return value if isinstance(value, (int, float)) else value[first:stop:every]
