"""What every generated function shares: its signature, its input prologue and its results.

Both writers of :func:`tenscalc.to_python` (the shape-free one of :mod:`.codegen` and the
shape-specialised one of :mod:`.source`) open and close the function with these lines, so
the two forms take the same arguments and hand back the same dtypes:

* every variable is a keyword argument; one named like a Python keyword (``lambda``,
  ``class``) is renamed ``_v_<name>`` inside and read from ``**_others``, so it is passed
  as ``f(**{"lambda": 0.1, "x": x})``, as ``tc.compile``'s function is called with it;
* other keyword arguments are accepted and ignored, as ``tc.compile`` ignores them (a
  derivative that no longer reads ``c`` still accepts ``c``);
* the results have NumPy's promotion of the inputs' dtypes (integers count as float64, no
  input at all as float64): float32 in, float32 out, whatever constants the code holds;
* the code calls no builtin by its plain name (a variable or the function itself may be
  called ``len`` or ``float``): the module binds private aliases first.

>>> python_names(["x", "lambda"])
{'lambda': '_v_lambda', 'x': 'x'}
>>> signature("f", {"lambda": "_v_lambda", "x": "x"})[0]
'def f(*, x, **_others):'
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Mapping

import numpy as np

from ..adjugate import ADJUGATE_SOURCE
from ..errors import EvaluationError, TensCalcError

#: module-level lines every generated module starts with (after ``import numpy as _np``)
ALIASES = "_ValueError, _TypeError, _len, _range = ValueError, TypeError, len, range  # a variable may be named len"


def read_aliases_only(source: str) -> str:
    """``source`` (a generated module) with its :data:`ALIASES` line cut to the aliases the
    module reads (``_len`` and ``_range`` only where a slice's length is computed).

    >>> read_aliases_only(ALIASES + "; raise _ValueError('x')").split(";")[0]
    '_ValueError = ValueError  # a variable may be named ValueError'
    """
    rest = source.replace(ALIASES, "", 1)
    aliases, names = (side.split(", ") for side in ALIASES.split("  #")[0].split(" = "))
    read = [(alias, name) for alias, name in zip(aliases, names) if re.search(rf"\b{alias}\b", rest)]
    line = ""
    if read:
        line = f"{', '.join(a for a, _ in read)} = {', '.join(n for _, n in read)}"
        line += f"  # a variable may be named {read[-1][1]}"
    return source.replace(ALIASES, line, 1)


#: the generated module's helper that casts a result to the inputs' dtype
RESULT_HELPER = '''
def _result(x, dtype):
    """A result of the inputs' dtype (a real result of complex inputs stays real) that the caller may write to."""
    x = _np.asarray(x)
    if x.dtype != dtype and (x.dtype.kind != "c" or dtype.kind == "c"):
        return x.astype(dtype)
    return x if x.flags.writeable else _np.array(x)


def _dtype_of(values):
    """NumPy's promotion of the values' dtypes: Python numbers weak, integer arrays as float64, none: float64."""
    strong, weak = [], []
    for v in values:
        if type(v) in (float, complex):
            weak.append(v)
        elif type(v) not in (int, bool):
            d = _np.asarray(v).dtype
            if d.kind in "biufc":
                strong.append(d if d.kind in "fc" else _np.dtype(_np.float64))
    return _np.result_type(*(strong or [_np.float64]), *weak)
'''

#: the generated module's inv and det: LAPACK has no float16 or longdouble routines, so those
#: are factorised in float32 / float64 and the result converted back (see tenscalc/linalg.py)
LAPACK_HELPER = '''
_lapack_wider = {"float16": "float32", "bfloat16": "float32", "float96": "float64", "float128": "float64",
                 "complex192": "complex128", "complex256": "complex128"}  # built once: inv runs per call


def _lapack(function, x):
    """np.linalg.inv or det of x in x's dtype, float16 and longdouble included."""
    x = _np.asarray(x)
    wider = _lapack_wider.get(x.dtype.name)
    if wider is None:
        return function(x)
    return _np.asarray(function(x.astype(wider))).astype(x.dtype)
'''

#: inv, det and adj as every NumPy runner computes them: ``tc.compile``'s loop of closures
#: (:func:`.program._bind_inv` ...) runs this text, its fused function and the generated
#: module call it, so the values and the errors (a singular matrix, an SVD that does not
#: converge on non-finite entries) are the same in the three; it reads ``_lapack`` above,
#: ``_adjugate`` (tenscalc/adjugate.py) and ``_EvaluationError``
LINALG_HELPER = '''
def _inv(x):
    """inv(x) in x's dtype; a singular matrix: an evaluation error."""
    try:
        return _np.asarray(_lapack(_np.linalg.inv, x))
    except _np.linalg.LinAlgError as exc:
        if "singular" in str(exc).lower():
            raise _EvaluationError(f"inv: the matrix is singular ({exc})") from None
        raise


def _det(x):
    """det(x), a 0-d array of x's dtype."""
    return _np.asarray(_lapack(_np.linalg.det, x))


def _adj(x, k):
    """adj(x, k) in x's dtype; an SVD that does not converge (non-finite entries): an evaluation error."""
    try:
        return _lapack(lambda m: _adjugate(m, k), x)
    except _np.linalg.LinAlgError as exc:
        if "converge" in str(exc).lower():
            raise _EvaluationError(f"adj: the SVD did not converge ({exc}); are the entries finite?") from None
        raise
'''

#: the generated module's error class for :data:`LINALG_HELPER`: tenscalc's own where it is
#: installed (``except tc.EvaluationError`` catches it), a ValueError where not (the module needs NumPy only)
LINALG_ERROR = """
try:
    from tenscalc.errors import EvaluationError as _EvaluationError
except ImportError:
    _EvaluationError = ValueError
"""

_namespace: dict = {"_np": np, "_EvaluationError": EvaluationError}
exec(compile(LAPACK_HELPER + ADJUGATE_SOURCE + LINALG_HELPER, "<tenscalc linalg>", "exec"), _namespace)  # noqa: S102
#: the closures' inv, det and adj of NumPy arrays: :data:`LINALG_HELPER` itself
linalg_inv, linalg_det, linalg_adj = _namespace["_inv"], _namespace["_det"], _namespace["_adj"]

#: the generated module's declared structure (``tc.to_python(..., assumptions=...)``, as
#: ``tenscalc.compiler.cholesky`` in ``tc.compile``): a declared symmetric matrix is checked
#: on entry ...
SYMMETRIC_HELPER = '''
def _symmetric(m, name, declared):
    """m, refused unless it equals its transpose up to rounding (it was declared so)."""
    if m.ndim != 2 or _np.array_equal(m, m.T):
        return m
    if m.shape[0] != m.shape[1]:
        raise _ValueError(f"'{name}' is declared {declared} but its value is not square (shape {m.shape})")
    gap = _np.abs(m - m.T).max()
    if m.dtype.kind in "fc" and gap <= 16 * m.shape[0] * _np.finfo(m.dtype).eps * _np.abs(m).max():
        return m
    raise _ValueError(f"'{name}' is declared {declared} but its value is not symmetric (|{name} - {name}.T| <= {gap})")
'''

#: ... and the inv, det and log det of a declared positive-definite one read one Cholesky
#: factor (its inverse through SciPy's LAPACK potri where SciPy is installed, NumPy's LU
#: inverse where not); complex, float16 and longdouble matrices take the LU path
CHOLESKY_HELPER = '''
def _cholesky(m, name):
    """(m, its lower Cholesky factor), refused unless m is positive definite (factor None: not float32/64)."""
    if m.dtype.char not in "fd":
        return m, None
    try:
        lower = _np.linalg.cholesky(m)
    except _np.linalg.LinAlgError:
        lower = None
    if lower is None or not _np.isfinite(lower.diagonal()).all():
        raise _ValueError(f"'{name}' is declared positive definite (pd) but its value is not (no Cholesky factor)")
    return m, lower


def _cho_inv(factor):
    """inv(m) from (m, its Cholesky factor): SciPy's potri; NumPy's LU inverse without SciPy."""
    m, lower = factor
    try:
        from scipy.linalg import lapack
    except ImportError:
        lapack = None
    if lower is None or lapack is None or m.shape[0] == 0:
        return _lapack(_np.linalg.inv, m)
    (potri,) = lapack.get_lapack_funcs(("potri",), (lower,))
    inverse, info = potri(lower, lower=1)  # the lower triangle; the upper one stays 0
    if info != 0:
        raise _ValueError(f"inv: LAPACK potri failed (info {info})")
    inverse += _np.tril(inverse, -1).T
    return inverse


def _cho_det(factor, log):
    """det(m) (log: log(det(m)), finite where det overflows) from (m, its Cholesky factor)."""
    m, lower = factor
    if lower is None:
        det = _lapack(_np.linalg.det, m)
        return _np.log(det) if log else det
    diagonal = lower.diagonal()
    return _np.asarray(2 * _np.sum(_np.log(diagonal)) if log else _np.prod(diagonal) ** 2, dtype=m.dtype)
'''

#: names the generated module defines at module level (a function of that name would replace them)
MODULE_NAMES = frozenset(
    {
        "_np",
        "_adjugate",
        "_contract",
        "_contract_expression",
        "_contract_path",
        "_DynamicProgramming",
        "_path",
        "_add_parts",
        "_sum",
        "_expressions",
        "_ValueError",
        "_TypeError",
        "_len",
        "_range",
    }
    | {"_result", "_dtype_of", "_out", "_gram", "_embed", "_write_diagonal"}
    | {"_lapack", "_lapack_wider", "_symmetric", "_cholesky", "_cho_inv", "_cho_det"}
    | {"_inv", "_det", "_adj", "_EvaluationError"}
    | {"_accumulate", "_add_into", "_write_bands", "_min", "_zip"}
    | {"_outer_columns", "_stretch"}
    # the shape-free module's bands (.banded.BAND_SOURCE)
    | {"_band_gcd", "_band_placed", "_band_transposed", "_band_clipped", "_band_lines", "_band_keys"}
    | {"_band_disjoint", "_band_ranges", "_bands", "_bands_identity", "_bands_diagonal", "_bands_scaled"}
    | {"_bands_placed", "_bands_clipped", "_bands_dense", "_brange", "_blen", "_bmax", "_bmin", "_bslice"}
    | {"_bzip", "_bany", "_bisinstance", "_bint", "_btuple"}
)
_CONSTANT_NAME = re.compile(r"_K\d+")


def check_identifier(name: object, what: str) -> str:
    """``name`` if it is a plain ASCII identifier (a keyword included), else a ``TensCalcError``."""
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise TensCalcError(f"{what} {name!r} is not a plain Python identifier (letters, digits and '_')")
    return name


def check_function_name(name: object) -> str:
    """The generated function's name: an identifier that is no keyword and no name of the module."""
    check_identifier(name, "function name")
    assert isinstance(name, str)
    if keyword.iskeyword(name):
        raise TensCalcError(f"function name {name!r} is a Python keyword")
    if name in MODULE_NAMES or _CONSTANT_NAME.fullmatch(name):
        raise TensCalcError(f"function name {name!r} is reserved in generated code")
    return name


def python_names(variables: Iterable[str]) -> dict[str, str]:
    """Variable name -> its name inside the generated function (a keyword renamed ``_v_<name>``).

    Names starting with ``_`` are refused: the generated code's own names all do.
    """
    names = {}
    for variable in sorted(variables):
        check_identifier(variable, "variable name")
        if variable.startswith("_"):
            raise TensCalcError(f"variable name {variable!r}: names starting with '_' are reserved in generated code")
        names[variable] = f"_v_{variable}" if keyword.iskeyword(variable) else variable
    return names


def signature(name: str, names: Mapping[str, str]) -> list[str]:
    """The ``def`` line and the lines reading keyword-named variables (unindented body lines
    after the first)."""
    plain = [python for variable, python in names.items() if python == variable]
    head = f"def {name}(*, {', '.join(plain)}, **_others):" if plain else f"def {name}(**_others):"
    lines = [head]
    for variable, python in names.items():
        if python != variable:  # a keyword: only f(**{"lambda": ...}) can pass it
            lines.append(f"# '{variable}' is a Python keyword: pass it as {name}(**{{'{variable}': value, ...}})")
            lines.append(f"if {variable!r} not in _others:")
            lines.append(
                f"    raise _TypeError(\"{name}() missing the argument '{variable}': pass it as "
                f"{name}(**{{'{variable}': value, ...}})\")"
            )
            lines.append(f"{python} = _others[{variable!r}]")
    return lines


def dtype_line(names: Mapping[str, str]) -> str:
    """The body line setting ``_dtype``, the results' dtype, from the values as passed (before
    they are made arrays: a Python number is weak, as in NumPy and ``tc.compile``)."""
    inputs = list(names.values())
    if inputs:
        return f"_dtype = _dtype_of(({', '.join(inputs)},))"
    return "_dtype = _dtype_of(_others.values())"
