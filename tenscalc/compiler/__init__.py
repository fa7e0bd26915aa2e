"""Compiled evaluation: all symbolic work once, then arrays at hand-written speed.

``tc.compile(expr_or_list, backend="numpy")`` turns expressions into a reusable
callable.  The symbolic half (``.plan``) fuses chains of products into
multi-operand einsums, removes deltas and constants by index renaming and
shares common subexpressions between all the compiled roots; the shape half
(``.program``) searches contraction paths with opt_einsum once per shape
signature (kept in a small bounded cache) and binds every step to a closure;
the NumPy kernels (``.kernels``) turn each pairwise contraction into
``matmul`` or ``multiply`` calls.

>>> import numpy as np, tenscalc as tc
>>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
>>> run = tc.compile([f, tc.gradient(f, "x"), tc.hessian(f, "x")])
>>> value, grad, hess = run(x=np.array([1.0, 2.0]), A=np.eye(2))
>>> float(value), grad.tolist(), hess.tolist()
(5.0, [2.0, 4.0], [[2.0, 0.0], [0.0, 2.0]])
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..calculus.elimination import COST_MODELS
from ..core.axes import axis_graph
from ..core.checks import count_nodes, require_exprs
from ..core.nodes import Expr
from ..dtypes import promoted_dtype
from ..errors import EvaluationError
from ..progress import optionally_verbose, stage
from ..simplifier import simplify_many
from .backends import Backend, ForeignArray, get_backend, mixed_dtypes_error, numeric
from .cholesky import check_symmetric, declared, factored
from .cost import Cost
from .given_shapes import lengths
from .plan import Plan, build_plan, paused_gc
from .program import Program, ShapeResolver, bind, variable_orders
from .scalar import scalar_program
from .source import FusedOpSource

__all__ = ["compile", "CompiledFunction"]

#: shape signatures kept per compiled function (least recently used evicted)
CACHE_SIZE = 16
#: programs of more ops than this run op by op unless ``jit=True`` was asked for: XLA's
#: compile time grows faster than the program (a sum of 200 / 1,000 sin terms and its
#: gradient, 803 / 4,003 ops: first call 16 s / 144 s jitted, 1.3 s / 1.8 s eager, on
#: the project's loaded 2-core machine)
JIT_MAX_OPS = 500

_shape_of = operator.attrgetter("shape")

#: a bound program compiled whole (``Backend.whole_call``): every input in order -> the
#: results, cast to the inputs' promoted dtype, one array or a tuple
WholeCall = Callable[..., Any]
#: (shape key, program, its whole call or None): what a call looks up by its shapes
Bound = tuple[tuple, Program, "WholeCall | None"]


def _run_form(call: WholeCall, single: bool) -> Callable[[Sequence[Any], Any], tuple[Any, ...]]:
    """``call`` as :meth:`.Program.run` calls ``Program.whole``: of the slot arrays and the
    dtype reference, to a tuple (the inputs read only for their shapes are not among the
    slot arrays: their dtypes do not promote here, as they do on a call of the function)."""

    def whole(arrays: Sequence[Any], like: Any) -> tuple[Any, ...]:
        results = call(*(arrays or ([] if like is None else [like])))
        return (results,) if single else results

    return whole


def _nothing(values: Mapping[str, Any]) -> tuple[()]:
    """The values of a function of no inputs."""
    return ()


def _one_dtype(arrays: Sequence[Any], results: Sequence[Any]) -> bool:
    """Whether every input and result has one dtype (nothing to cast: the common case,
    decided by identity tests, as this runs on every call)."""
    if not arrays:
        return False
    dtype = arrays[0].dtype
    for array in arrays:
        if array.dtype is not dtype:
            return False
    for result in results:
        if getattr(result, "dtype", None) is not dtype:
            return False
    return True


class CompiledFunction:
    """A compiled expression (or list or dict of expressions); call it with arrays.

    Call with a mapping ``{name: array}`` and/or keyword arrays.  Returns one
    array for a single expression, a tuple for a list, a dict (same keys) for a
    dict.  Arrays of the backend (or NumPy arrays and numbers, which are
    converted) are accepted.

    Positional arrays are bound only when there is no doubt which variable they
    are: a function of one input variable may be called ``run(array)``.  With
    several inputs a positional array raises an ``EvaluationError`` that
    lists the inputs and says to pass them by name: variables carry no
    declaration order (``expr.variables`` is sorted by name, so ``x`` and ``A``
    would silently swap).

    Attributes
    ----------
    exprs : tuple of Expr
        The compiled roots.
    backend : str
        The array backend's name.
    inputs : tuple of str
        The variables a call needs (those the expressions contain, plus those
        whose shape only is needed: ``x`` for the Hessian ``2 delta(1){x.0}`` of
        ``x·x``, see ``Expr.shape_variables``).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    >>> compiled = tc.compile([f, tc.gradient(f, "x")])
    >>> value, grad = compiled(x=np.array([1.0, 2.0]), A=np.eye(2))
    >>> float(value), grad.tolist()
    (5.0, [2.0, 4.0])
    >>> f = tc.parse("x *(i,i->) x", {"x": 1})     # one input: a positional array is fine
    >>> tc.compile({"f": f, "g": tc.gradient(f, "x")})(np.array([1.0, 2.0]))
    {'f': array(5.), 'g': array([2., 4.])}
    """

    def __init__(
        self,
        exprs: Sequence[Expr],
        single: bool,
        backend: Backend,
        keys: Sequence[str] | None = None,
        jit: bool | None = None,
        auto: bool = False,
        assumptions: Mapping[str, Any] | None = None,
    ):
        self.exprs = tuple(exprs)
        #: whether bound programs run as one function of the backend's compiler (by
        #: default only those of at most JIT_MAX_OPS ops: see _bind)
        self.jit = _jit_choice(backend, jit)
        self._jit_request = jit
        # no backend named: NumPy, or the library of the arrays passed (torch in, torch out)
        self._auto = auto
        self._twins: dict[str, CompiledFunction] = {}
        self._single = single
        self._keys = None if keys is None else tuple(keys)
        self._backend = backend
        #: show each binding to new shapes (tc.compile(..., verbose=True))
        self.verbose = False
        self._assumptions = assumptions
        structure = declared(
            assumptions, {} if assumptions is None else {n: o for expr in self.exprs for n, o in expr.variables.items()}
        )
        #: the matrices declared symmetric (``symmetric``, ``psd``, ``pd``, ``diagonal``): the
        #: plan is made from the roots simplified with their transposes written as themselves
        self.symmetric = structure.symmetric
        roots = self.exprs
        if self.symmetric:
            roots = tuple(simplify_many(list(roots), symmetric=sorted(self.symmetric)))
        described = f"{len(self.exprs)} expression{'s' if len(self.exprs) > 1 else ''}"
        with stage("compile", lambda: f"{described}, {count_nodes(self.exprs)} nodes") as logged:
            with paused_gc():  # linear time on huge DAGs (see paused_gc)
                self.plan: Plan = build_plan(roots)
                # one axis graph for all roots: they share nodes (see axis_graph)
                self._graphs = [axis_graph(roots[0] if len(roots) == 1 else roots)]
            logged.done(lambda: f"a plan of {len(self.plan.steps)} steps")
        orders = variable_orders(self._graphs)
        # inputs the plan reads first (their slots), then shape-only ones
        names = list(self.plan.inputs) + sorted(n for n in orders if n not in self.plan.inputs)
        self.inputs = tuple(names)
        self.orders = {name: orders[name] for name in names}
        #: the inputs declared positive definite: their inv and det read one Cholesky factorisation
        self.pd = structure.pd & set(names)
        # the symmetric inputs checked on each call, but those the factorisation checks; each with
        # whether it is declared pd and whether its inv or det is computed.  A lazy backend's
        # factor cannot raise at the call: the matrix it factorises is handed on waiting for that
        # factor (Dask's checked_declaration makes it), so a result reading the matrix raises too
        read = factored(self.plan, self.pd) if self.pd else frozenset()  # pd matrices whose inv or det is computed
        checked: frozenset[str] = frozenset()
        if self.symmetric and backend.checks_symmetry:
            checked = self.symmetric - (read if backend.factorises and not backend.lazy else frozenset())
        self._checks = tuple(
            (i, name, name in self.pd, name in read) for i, name in enumerate(names) if name in checked
        )
        self._slot_count = len(self.plan.inputs)
        #: shape key -> (key, bound program, its whole-program call or None): see _bind
        self._programs: OrderedDict[tuple, Bound] = OrderedDict()
        self._lock = threading.Lock()  # one function may be called from many threads
        #: (shape key, program, whole call) of the latest call: repeated calls with the same
        #: shapes (an optimiser's loop) skip the locked LRU lookup
        self._last: Bound | None = None
        #: the program of this thread's latest call (read by _whole: self._last may be
        #: another thread's by then, for other shapes)
        self._mine = threading.local()
        #: the backend's test that a call's values may go to a jitted program unconverted
        #: (JAX or NumPy float arrays to JAX's), None where it has none or runs op by op; a
        #: function of no inputs promotes the dtypes of whatever it was given (see __call__),
        #: so it always takes the general path
        native = backend.native if type(backend).native is not Backend.native else None
        # values checked for a declared structure take the general path (converted, then checked)
        self._native = native if names and self.jit and not self._checks else None
        #: a call's values in input order: a tuple for several inputs (and none), the value
        #: itself for one
        self._many = len(names) != 1
        self._gather: Callable[[Mapping[str, Any]], Any] = operator.itemgetter(*names) if names else _nothing
        #: (shape key, whole call, bound) of the latest call that handed its values to a whole
        #: compiled function as they are, with nothing checked around it (JAX's: a jitted program
        #: of no declared matrix): a call with arrays the backend takes natively, of those shapes,
        #: goes straight to it (see __call__).  An inv, det or adj's matrix needs no look before:
        #: the program's flags, read after it ran, say what every runner says of a bad matrix
        #: (``JaxBackend.checked_linalg``: LAPACK is given zeros for it, so its SVD cannot hang)
        self._direct: tuple[tuple, WholeCall, Bound] | None = None

    # pickling (multiprocessing) sends the expressions and rebuilds the plan: the
    # bound programs are closures, and cheap to bind again
    def __getstate__(self) -> dict[str, Any]:
        state = {"exprs": self.exprs, "single": self._single, "backend": self._backend.name, "keys": self._keys}
        return {**state, "jit": self._jit_request, "auto": self._auto, "assumptions": self._assumptions}

    def __setstate__(self, state: dict[str, Any]) -> None:
        backend = get_backend(state["backend"])
        keys, jit, auto = state.get("keys"), state.get("jit"), state.get("auto", False)
        assumptions = state.get("assumptions")
        CompiledFunction.__init__(self, state["exprs"], state["single"], backend, keys, jit, auto, assumptions)

    @property
    def backend(self) -> str:
        return self._backend.name

    # ---------------------------------------------------------------- calling
    def __call__(self, values: Mapping[str, Any] | Any = None, /, *args: Any, **kwargs: Any) -> Any:
        # the common call run(x=..., A=...) skips the checks below: this path is
        # paid on every call, and on small problems it is a visible share of the time
        if values is None and not args:
            values = kwargs
        elif args or (type(values) is not dict and not isinstance(values, Mapping)):  # an ABC check costs
            values = self._positional((values, *args), kwargs)
        elif kwargs:
            values = {**values, **kwargs}
        try:  # one C call (operator.itemgetter), no Python loop or frame
            given = self._gather(values) if self._many else (self._gather(values),)
        except KeyError as exc:
            name = exc.args[0]
            raise EvaluationError(
                f"no value given for variable '{name}' (order {self.orders.get(name, '?')})"
            ) from None
        direct = self._direct
        # an optimiser's loop on JAX: the latest shapes again, arrays jit takes as they are.  What
        # _evaluate would do, less its frame and lookups (about 1 us of a 20 us call)
        if direct is not None:
            key = tuple(map(_shape_of, given)) if self._many else (given[0].shape,)
            if key == direct[0] and self._native(given):  # type: ignore[misc]  # set only with _native
                self._mine.last = direct[2]
                try:
                    results = direct[1](*given)
                except (RuntimeError, TypeError) as exc:  # as _evaluate says it
                    named = mixed_dtypes_error(self.inputs, given, self.backend, exc)
                    if named is None:
                        raise
                    raise named from exc
                return results if self._keys is None else dict(zip(self._keys, results))
        return self._evaluate(given, values)

    def _evaluate(self, given: Sequence[Any], values: Mapping[str, Any]) -> Any:
        """The results for ``given`` (the values of ``inputs`` in order; ``values`` the call's
        mapping, read for a foreign array's twin and for the dtypes of a function of no inputs):
        the one path of a call and of :meth:`jitted`'s function, converted, checked, run."""
        inputs = self.inputs
        native = self._native
        if native is not None and native(given):  # JAX (NumPy float) arrays for a jitted program: as they are
            arrays = given
        else:
            try:
                arrays = list(map(self._backend.convert, inputs, given))
            except ForeignArray as exc:  # a torch (jax, cupy) array given to the NumPy backend
                if self._auto:
                    return self._twin(exc.library)(values)
                arrays = [numeric(name, value) for name, value in zip(inputs, given)]  # backend="numpy" was asked
            for i, name, pd, read in self._checks:  # the declared structure, on the data (never a silent wrong number)
                checked = self._backend.checked_declaration(name, arrays[i], pd, read)  # a lazy graph's task
                if checked is None:
                    check_symmetric(name, arrays[i], pd)
                else:
                    arrays[i] = checked
        key = tuple(map(_shape_of, arrays)) if self._many else (arrays[0].shape,)
        last = self._last  # one read of an immutable triple: safe without the lock
        if last is None or last[0] != key:
            last = self._cached(key) or self._bound(dict(zip(self.inputs, key)))
            self._last = last
        self._mine.last = last
        _, program, call = last
        try:
            if call is not None:  # one compiled function: cast and packed inside
                results = call(*arrays)
                if arrays is given:  # the values went in as they are: their dtypes are the promoted ones
                    self._direct = (key, call, last)  # the next call with these shapes goes straight to call
                    return results if self._keys is None else dict(zip(self._keys, results))
                results = (results,) if self._single else results
            else:
                if arrays is given:  # left unconverted for a jitted program, but this one runs op by op
                    arrays = list(map(self._backend.convert, inputs, given))
                results = program.run(arrays[: self._slot_count], arrays[0] if arrays else None)
        except (RuntimeError, TypeError) as exc:
            named = mixed_dtypes_error(inputs, arrays, self.backend, exc)
            if named is None:
                raise
            raise named from exc
        if not program.fresh:
            results = self._backend.unalias(results, arrays)
        if not _one_dtype(arrays, results):  # float32 in, float32 out (see tenscalc.dtypes)
            results = self._backend.cast(results, promoted_dtype(given if inputs else values.values()))
        if self._keys is not None:
            return dict(zip(self._keys, results))
        return results[0] if self._single else results

    def jitted(self, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Callable[..., Any]:
        """The compiled function for the shapes of ``values``, checked as a call is: for
        ``backend="jax"``, the ``jax.jit`` function this object calls for them, behind the
        checks of a call (one code path, ``__call__``'s).

        It takes the inputs positionally, in the order of ``inputs``, and returns what
        a call returns (one array for one expression, else a tuple; a dict-of-keys
        compile's results as a tuple in the keys' order).  ``values`` are given as to a
        call (and are computed once).  On every call of it, as on a call of this object:

        * the number of arrays (one per name of ``inputs``) and their shapes, which
          must be those of ``values`` (jit would trace the program again for others);
        * their dtypes: converted as a call converts them, a value that is not a
          number or mixed float widths refused, the results cast to the inputs' dtype;
        * a declared matrix's structure (``assumptions``: symmetric, positive definite);
        * the matrix of every ``inv``, ``det`` and ``adj``, an input or computed: a NaN
          or inf entry, and for ``inv`` a singular matrix, raise the error of every
          backend (``tenscalc.linalg.matrix_error``): the program computes two flags for
          each of these steps (its matrix finite: n² reads, fused by XLA; for ``inv``, no
          zero pivot in its LU factor, NumPy's singular: n reads), read after it runs.

        Under the caller's own ``jax.jit`` (or ``grad``, ``vmap``), the arrays are
        tracers with no values: only their number, shapes and dtypes are checked, at
        trace time; nothing on the data (an ``inv``, ``det`` or ``adj`` of a matrix with
        a NaN or inf entry is NaN there, and ``inv`` of a singular matrix JAX's inf and NaN).

        ``unchecked_jitted`` hands out a ``jax.jit`` function of the program without the
        flags, with none of these checks (for measuring JAX's own dispatch).

        Examples
        --------
        >>> import numpy as np, tenscalc as tc
        >>> run = tc.compile(tc.parse("x *(i,i->) x", {"x": 1}))
        >>> run.jitted(x=np.ones(3))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tenscalc.errors.EvaluationError: backend 'numpy' compiles no whole program...
        """
        key = self._whole(values, kwargs)[0]
        inputs, evaluate, keys = self.inputs, self._evaluate, self._keys

        def checked(*arrays: Any) -> Any:
            if len(arrays) != len(inputs):
                raise EvaluationError(
                    f"this jitted function takes {len(inputs)} array{'s' * (len(inputs) != 1)}, the values of "
                    f"{', '.join(inputs) or 'no input'} in that order; got {len(arrays)}"
                )
            shapes = tuple(tuple(np.shape(array)) for array in arrays)
            if shapes != key:
                raise EvaluationError(
                    f"this jitted program is bound to the input shapes {key}, not {shapes}: take the function "
                    "for these shapes from CompiledFunction.jitted (or call the CompiledFunction)"
                )
            results = evaluate(arrays, dict(zip(inputs, arrays)))
            return results if keys is None else tuple(results[k] for k in keys)

        return checked

    def unchecked_jitted(self, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Callable[..., Any]:
        """The backend's own compiled function for the shapes of ``values`` (a ``jax.jit``
        function of the program a call runs, without its ``inv``/``det``/``adj`` flags; traced
        and compiled on its first call), with no checks around JAX's dispatch: no input
        conversion, no shape or dtype check of ours (jit traces again for other shapes: a shape
        error is raised then), no declared structure and no NaN, inf or singular matrix checked;
        a bad value gives a NaN or a wrong number without a word.  For measuring JAX's own
        dispatch; ``jitted`` is the checked one.

        Examples
        --------
        >>> import numpy as np, tenscalc as tc
        >>> tc.compile(tc.parse("x *(i,i->) x", {"x": 1})).unchecked_jitted(x=np.ones(3))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tenscalc.errors.EvaluationError: backend 'numpy' compiles no whole program...
        """
        call = self._whole(values, kwargs)[2]
        return getattr(call, "unchecked", call)  # JAX's: the program without its linalg flags

    def _whole(self, values: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> tuple[tuple, Program, WholeCall]:
        """(shape key, program, whole call) bound for ``values`` (a call binds and checks them),
        or a clear error where the backend compiles no whole program."""
        self._mine.last = None
        self(values, **kwargs)
        last = self._mine.last  # this call's, whatever another thread called since
        if last is None or last[2] is None:
            raise EvaluationError(
                f"backend {self.backend!r} compiles no whole program for these shapes (only backend='jax' "
                "with jit on: its default, for programs of up to JIT_MAX_OPS ops, or jit=True); call the "
                "CompiledFunction itself"
            )
        return last[0], last[1], last[2]

    def _twin(self, library: str) -> CompiledFunction:
        """The same expressions compiled for ``library`` (made once, on its first arrays)."""
        twin = self._twins.get(library)
        if twin is None:
            twin = CompiledFunction(
                self.exprs, self._single, get_backend(library), self._keys, assumptions=self._assumptions
            )
            self._twins[library] = twin
        return twin

    def _positional(self, arrays: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Bind positional arrays: only the one input not given by name, or a clear error."""
        open_inputs = [name for name in self.inputs if name not in kwargs]
        if len(arrays) == 1 and len(open_inputs) == 1:
            return {**kwargs, open_inputs[0]: arrays[0]}
        names = ", ".join(sorted(self.inputs)) or "none"
        example = ", ".join(f"{name}=..." for name in sorted(self.inputs))
        raise EvaluationError(
            f"this compiled function has the inputs {names}: pass them by name, run({example}) or "
            f"run({{'name': array, ...}}); a positional array is accepted only for a single input "
            f"(got {len(arrays)} positional for {len(open_inputs)} inputs not given by name)"
        )

    def _bind(self, shapes: Mapping[str, tuple[int, ...]]) -> Program:
        """The program bound to ``shapes`` (and cached for the calls with them)."""
        return self._bound(shapes)[1]

    def _bound(self, shapes: Mapping[str, tuple[int, ...]]) -> Bound:
        """(key, program, whole call) bound to ``shapes``, cached for the calls with them."""
        for name, shape in shapes.items():
            order = self.orders[name]
            if len(shape) != order:
                raise EvaluationError(
                    f"variable '{name}' is declared with order {order} but the array given has "
                    f"{len(shape)} axes (shape {tuple(shape)})"
                )
        resolver = ShapeResolver(self._graphs, shapes)
        described = ", ".join(f"{name} {tuple(shape)}" for name, shape in shapes.items())
        with optionally_verbose(self.verbose), stage("bind", lambda: f"shapes {described}") as logged:
            # every step a number (NumPy): one straight-line float function, the program its fallback
            lowered = bind(self.plan, resolver, self._backend, self.pd, FusedOpSource)  # the fused function's writer
            program = scalar_program(self.plan, resolver, lowered)
            logged.done(f"a {self._backend.name} program")
        call = None
        if self.jit and (self._jit_request or len(program.ops) <= JIT_MAX_OPS):
            signature = [tuple(shapes[name]) for name in self.inputs]
            call = self._backend.whole_call(
                program.traced_steps, self._slot_count, self._single, signature, self.inputs
            )
            if call is None:
                program.whole = self._backend.whole_program(program.traced_steps)
            else:  # Program.run (and whoever calls it) runs the same compiled function
                program.whole = _run_form(call, self._single)
        key = tuple(tuple(shapes[name]) for name in self.inputs)
        bound = (key, program, call)
        with self._lock:
            self._programs[key] = bound
            self._programs.move_to_end(key)
            while len(self._programs) > CACHE_SIZE:
                self._programs.popitem(last=False)
        return bound

    def _cached(self, key: tuple) -> Bound | None:
        """The (key, program, whole call) bound to ``key`` if cached, marked most recently used."""
        with self._lock:
            bound = self._programs.get(key)
            if bound is not None:
                self._programs.move_to_end(key)
            return bound

    # ---------------------------------------------------------------- cost
    def cost(self, shapes: Mapping[str, Any]) -> Cost:
        """Estimated cost of one call at ``shapes``: flops, multiplications, operations,
        largest intermediate and peak memory (in entries, inputs excluded), and the steps
        flagged for an intermediate out of proportion (see ``tenscalc.compiler.cost.Cost``).

        ``shapes`` maps each input to its shape (a tuple of integers >= 0) or to an array.

        Examples
        --------
        >>> import tenscalc as tc
        >>> g = tc.gradient(tc.parse("x *(i,i->) x", {"x": 1}), "x")
        >>> tc.compile(g).cost({"x": (1000,)}).largest_intermediate
        1000
        """
        resolved: dict[str, tuple[int, ...]] = {}
        for name in self.inputs:
            if name not in shapes:
                raise EvaluationError(f"no shape given for variable '{name}' (order {self.orders[name]})")
            value = shapes[name]
            if isinstance(value, (int, float, complex)):  # a number is a 0-axis value
                resolved[name] = ()
            else:
                resolved[name] = lengths(name, value, EvaluationError)
        key = tuple(resolved[name] for name in self.inputs)
        bound = self._cached(key)
        if bound is not None:
            return bound[1].cost
        for name, shape in resolved.items():
            if len(shape) != self.orders[name]:
                raise EvaluationError(
                    f"variable '{name}' is declared with order {self.orders[name]} but the shape given has "
                    f"{len(shape)} axes ({shape})"
                )
        # an estimate allocates nothing (constants are stand-ins) and is not cached for calls
        return bind(self.plan, ShapeResolver(self._graphs, resolved, estimate=True), self._backend, self.pd).cost

    def __repr__(self) -> str:
        roots = len(self.exprs)
        return (
            f"<CompiledFunction: {roots} expression{'s' * (roots != 1)}, {len(self.plan.steps)} steps, "
            f"backend {self.backend!r}, inputs {', '.join(self.inputs)}>"
        )


def _check_jit(jit: object) -> None:
    """``jit`` is True, False or None, or a clear error (``jit="False"`` is a true value)."""
    if jit is not None and not isinstance(jit, (bool, np.bool_)):
        raise EvaluationError(f"jit must be True, False or None (the backend's default), not {jit!r}")


def _jit_choice(backend: Backend, jit: bool | None) -> bool:
    """Whether programs are handed to the backend's compiler: the backend's default, or
    the caller's choice where the backend has a compiler (a clear error where not)."""
    if jit is None:
        return backend.jit_default
    _check_jit(jit)
    if jit and type(backend).whole_program is Backend.whole_program:
        raise EvaluationError(
            f"backend {backend.name!r} has no whole-program compiler: jit=True is for 'jax' (jax.jit, "
            f"the default there) and 'torch' (torch.compile)"
        )
    return bool(jit)


def compile(  # noqa: A001
    exprs: Expr | Sequence[Expr] | Mapping[str, Expr],
    backend: str | None = None,
    *,
    jit: bool | None = None,
    verbose: bool = False,
    assumptions: Mapping[str, Any] | None = None,
) -> CompiledFunction:
    """Compile one expression, a list or a dict of them into a reusable callable.

    All symbolic work happens here, once: the evaluation plan, product fusion,
    delta and constant removal, common subexpressions shared between the
    expressions of a list.  Contraction paths are searched on the first call
    with each new combination of shapes and then reused.

    Parameters
    ----------
    exprs : Expr, sequence of Expr, or dict str -> Expr
        What to compute, e.g. ``[f, gradient, hessian]`` or
        ``{"f": f, "g": gradient}`` (or ``tc.gradient(f, ["x", "A"])``).
    backend : str, optional
        ``"numpy"``, ``"torch"``, ``"jax"``, ``"cupy"`` or ``"dask"``.
        The other libraries are optional; Dask returns lazy arrays (call
        ``dask.compute`` on them).  Not given: NumPy, except that a call with
        torch tensors (JAX or CuPy arrays) runs in that library and returns
        its arrays (torch in, torch out).
    jit : bool, optional
        Hand each bound program (one per shape signature) to the backend's own
        compiler as one function: ``jax.jit`` for ``"jax"`` (the default there, so
        XLA fuses the elementwise chains; ``jit=False`` runs op by op; by default a
        program of more than ``JIT_MAX_OPS`` = 500 ops runs op by op too, as XLA's
        compile time grows faster than the program: ``jit=True`` compiles it anyway), and
        ``torch.compile`` for ``"torch"`` (off by default: its first call takes
        seconds).  NumPy, CuPy and Dask have none (``jit=True`` is an error).
    verbose : bool
        Show the symbolic work (the plan here, and binding it to each new set of
        shapes at a call) on standard error, with sizes and times (see
        ``tenscalc.progress``).
    assumptions : mapping, optional
        What the data is known to be, per variable, in the words of a problem's
        ``declare`` block and of ``tc.check_convexity``: ``{"K": "pd"}`` or a
        problem's ``.assumptions`` as it is (variables the expressions do not read
        are skipped).  The compiler uses ``pd`` (positive definite): every
        ``inv(K)``, ``det(K)`` and ``log(det(K))`` then reads one Cholesky
        factorisation of ``K`` per call (about half the work of an LU inverse; the
        log of the determinant summed from the factor, finite where ``det(K)``
        overflows), on the NumPy, PyTorch, JAX and Dask backends (CuPy, and
        complex values, take the generic path: LU, positive definiteness trusted
        on CuPy).  A matrix declared ``symmetric``, ``psd``, ``pd`` or
        ``diagonal`` is its own transpose: the expressions are simplified as
        ``tc.derivative(..., symmetric=[...])`` simplifies (``A + Aᵀ`` is ``2A``).
        The declarations are checked on every call (not a JAX tracer inside the
        caller's ``jax.jit``): a value that is not symmetric (beyond rounding) or,
        where factorised, not positive definite raises an ``EvaluationError``
        naming the variable.  Dask's arrays are lazy: its check runs in the graph
        (the factor is a task there, running NumPy's text), and each result that
        reads the matrix raises NumPy's error when dask computes it.  See ``tenscalc.compiler.cholesky``.

    Returns
    -------
    CompiledFunction
        Call it with a mapping and/or keyword arrays (or one positional array
        when it has one input); it returns one array for a single expression,
        a tuple for a list and a dict with the same keys for a dict.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    >>> tc.compile(f)(A=np.eye(2), x=[1.0, 2.0])
    array([1., 2.])
    >>> p = tc.parse_problem("declare K 2 pd y 1 expression y *(i,ij->j) inv(K) *(j,j->) y derivative wrt K")
    >>> run = tc.compile(p.derivative(), assumptions=p.assumptions)  # inv(K) by Cholesky
    >>> grad = run(K=np.array([[2.0, 0.0], [0.0, 4.0]]), y=np.array([1.0, 1.0]))
    >>> np.round(grad, 12).tolist()  # -inv(K) y yᵀ inv(K)
    [[-0.25, -0.125], [-0.125, -0.0625]]
    """
    single = isinstance(exprs, Expr)
    keys = None
    if isinstance(exprs, Mapping):
        keys = list(exprs)
        for key in keys:
            if not isinstance(key, str):
                raise EvaluationError(f"the keys of a dict to compile must be str, got {key!r}")
        roots = require_exprs([exprs[key] for key in keys], "compile")
    else:
        roots = require_exprs(exprs, "compile")
    _check_jit(jit)  # before the backend is loaded: a bad argument is named whether its library is installed or not
    with optionally_verbose(verbose):
        run = CompiledFunction(
            roots, single, get_backend(backend or "numpy"), keys, jit, auto=backend is None, assumptions=assumptions
        )
    run.verbose = verbose
    return run


def _compiled_flops(exprs: list[Expr], shapes: Mapping[str, Any]) -> float:
    """The flops of the compiled ``exprs`` at ``shapes``: how ``jacobian_accumulation(order="auto",
    shapes=...)`` compares accumulation orders (registered there, so the calculus does not
    import the compiler)."""
    return compile(exprs).cost(shapes).flops


COST_MODELS["flops"] = _compiled_flops
