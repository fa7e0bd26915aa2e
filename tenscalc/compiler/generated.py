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

import builtins
import io
import keyword
import re
import tokenize
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from ..adjugate import ADJUGATE_SOURCE
from ..errors import EvaluationError, TensCalcError
from ..linalg import MATRIX_ERROR_SOURCE, matrix_label

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


def shield_function_name(source: str, name: str) -> str:
    r"""``source`` (a generated module defining the function ``name``) reading the builtin
    ``name`` through the alias ``_b_<name>``, bound before the function is: once the
    module defines ``def min(...)``, every read of ``min`` in its helpers and body would
    call the generated function instead (``tc.to_python(..., name="min")`` raised a
    ``TypeError`` on its first call).  Code reads only: names after ``.`` or ``def``,
    keyword arguments and strings are left as they are.

    >>> print(shield_function_name("def min(*, x):\n    return min(x, 2)\n", "min"), end="")
    _b_min = min  # the function is named min: the code reads the builtin as _b_min
    def min(*, x):
        return _b_min(x, 2)
    """
    if name not in vars(builtins):
        return source
    alias = f"_b_{name}"
    definition = re.search(rf"^def {name}\((.*)\):$", source, flags=re.MULTILINE)
    assert definition is not None, "a generated module defines its function"
    # a variable of the function's name (``len``): inside the function that name is the
    # variable, which the code reads as such; only the helpers above it need the alias
    parameter = name in re.findall(r"\w+", definition.group(1))
    last_row = source.count("\n", 0, definition.start()) if parameter else None
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.NL]
    places = []  # (row, column) of each read to rename
    for k, token in enumerate(tokens):
        if token.type != tokenize.NAME or token.string != name:
            continue
        before = tokens[k - 1].string if k else ""
        after = tokens[k + 1].string if k + 1 < len(tokens) else ""
        if before not in (".", "def") and after != "=" and (last_row is None or token.start[0] <= last_row):
            places.append(token.start)
    lines = source.split("\n")
    for row, col in sorted(places, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + alias + line[col + len(name) :]
    text = "\n".join(lines)
    # before the first statement that may read it (an alias line reads builtins too)
    first = re.search(r"^(import|from|[A-Za-z_]\w* =|def) ", text, flags=re.MULTILINE)
    assert first is not None, "a generated module has statements"
    line = f"{alias} = {name}  # the function is named {name}: the code reads the builtin as {alias}\n"
    return text[: first.start()] + line + text[first.start() :]


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
            try:
                d = _np.asarray(v).dtype
            except Exception:  # not an array (a ragged list): _numbers says so
                continue
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
#: module call it, so the values and the errors (a singular matrix, a matrix with a NaN or
#: inf entry, whose inv and det LAPACK would return as NaN without a word) are the same in
#: the three; ``label`` names the matrix in them (:func:`tenscalc.linalg.matrix_label`: an
#: input's name, a computed matrix's text), whose words are :func:`tenscalc.linalg.matrix_error`'s
#: own text, said alike by ``tc.evaluate`` and the other backends.  It reads ``_lapack`` above,
#: ``_adjugate`` (tenscalc/adjugate.py) and ``_EvaluationError``
LINALG_HELPER = (
    MATRIX_ERROR_SOURCE
    + '''

def _finite(x, what, label):
    """x, refused where an entry is not finite: its inv, det or adj would be NaN (n^2 reads, against n^3)."""
    if not _np.isfinite(x).all():
        raise _matrix_error(what, label, "finite")
    return x


def _inv(x, label=None):
    """inv(x) in x's dtype; a singular matrix or a non-finite entry: an evaluation error naming x (label)."""
    try:
        return _np.asarray(_lapack(_np.linalg.inv, _finite(x, "inv", label)))
    except _np.linalg.LinAlgError as exc:
        if "singular" in str(exc).lower():
            raise _matrix_error("inv", label, "singular") from None
        raise


def _det(x, label=None):
    """det(x), a 0-d array of x's dtype; a non-finite entry: an evaluation error naming x (label)."""
    return _np.asarray(_lapack(_np.linalg.det, _finite(x, "det", label)))


def _adj(x, k, label=None):
    """adj(x, k) in x's dtype; a non-finite entry or an SVD that does not converge: an evaluation error."""
    try:
        return _lapack(lambda m: _adjugate(m, k), _finite(x, "adj", label))
    except _np.linalg.LinAlgError as exc:
        if "converge" in str(exc).lower():
            raise _matrix_error("adj", label, "svd") from None
        raise
'''
)


def label_literal(node: Any) -> str:
    """The label of the matrix of ``node`` (an inv, det or adj) as the generated code passes
    it to :data:`LINALG_HELPER`'s functions: a Python string literal.

    >>> import tenscalc as tc
    >>> label_literal(tc.inv(tc.var("A", 2)))
    "'A'"
    """
    return repr(matrix_label(node.children[0]))


#: the generated module's error class for :data:`LINALG_HELPER`: tenscalc's own where it is
#: installed (``except tc.EvaluationError`` catches it), a ValueError where not (the module needs NumPy only)
LINALG_ERROR = """
try:
    from tenscalc.errors import EvaluationError as _EvaluationError
except ImportError:
    _EvaluationError = ValueError
"""

#: a value as an array of numbers, as every runner takes it (``tc.evaluate``, ``tc.compile``'s
#: NumPy conversion and both generated modules run this text): integers and booleans become
#: float64, complex and float stay, anything else (strings, dates, objects, ragged lists) is
#: refused naming the variable.  It reads ``_EvaluationError`` (:data:`LINALG_ERROR`)
NUMBERS_HELPER = '''
def _numbers(value, name):
    """value as a NumPy array of numbers (integers and booleans as float64), or an error naming name."""
    try:
        array = _np.asarray(value)
    except Exception as exc:  # anything np.asarray rejects
        raise _EvaluationError(f"the value of '{name}' is not an array: {exc}") from None
    if array.dtype.kind in "biu":
        return array.astype(_np.float64)
    if array.dtype.kind not in "fc":
        raise _not_numbers(name, array.dtype)
    return array


def _not_numbers(name, dtype):
    """The error of a value whose dtype holds no numbers (strings, dates, objects)."""
    return _EvaluationError(f"the value of '{name}' has dtype {dtype}; numbers are needed")
'''

#: the generated module's declared structure (``tc.to_python(..., assumptions=...)``), and
#: ``tc.compile``'s check of it on NumPy arrays (:func:`.cholesky.check_symmetric` runs this
#: text): a declared symmetric matrix is refused unless it equals its transpose up to
#: rounding (_SYMMETRY_ULPS n eps max|m|, as a product A B Aᵀ is), an entry that is not finite named as such
SYMMETRIC_HELPER = '''
def _not_finite(name, declared):
    """The error of a declared matrix with an entry that is not finite."""
    return _EvaluationError(f"'{name}' is declared {declared} but its value has an entry that is not finite")


def _symmetric(m, name, declared):
    """m, refused unless it equals its transpose up to rounding (it was declared so)."""
    if m.ndim != 2 or _np.array_equal(m, m.T):
        return m
    if m.shape[0] != m.shape[1]:
        raise _EvaluationError(f"'{name}' is declared {declared} but its value is not square (shape {m.shape})")
    gap = _np.abs(m - m.T)
    worst = gap.max()
    if not _np.isfinite(worst):
        raise _not_finite(name, declared)
    if _rounding_gap(worst, m.shape[0], m.dtype, _np.abs(m).max()):
        return m
    i, j = (k.item() for k in _np.unravel_index(_np.argmax(gap), gap.shape))
    raise _asymmetric(name, declared, i, j, m[i, j].item(), m[j, i].item())


#: a declared symmetric n x n matrix may differ from its transpose by this many eps times
#: n max|m| (the rounding of a product A B Aᵀ): every runner's check reads it
_SYMMETRY_ULPS = 16


def _rounding_gap(worst, n, dtype, scale):
    """Whether ``worst``, the largest |m - mᵀ| of an n x n float matrix of ``dtype`` with
    max|m| = ``scale``, is rounding (an integer matrix has none)."""
    return dtype.kind in "fc" and worst <= _SYMMETRY_ULPS * n * _np.finfo(dtype).eps * scale


def _asymmetric(name, declared, i, j, a, b):
    """The error of a declared matrix whose entry [i, j] is a and [j, i] is b (its largest gap)."""
    return _EvaluationError(
        f"'{name}' is declared {declared} but its value is not: {name}[{i}, {j}] = {a!r}, {name}[{j}, {i}] = {b!r}"
    )
'''

#: ... and the inv, det and log det of a declared positive-definite one read one Cholesky
#: factor: the text every NumPy runner runs (``tc.compile``'s closures exec it once, its fused
#: function and both generated modules call it), so the numbers and the errors are the same
#: in the four.  The factor is LAPACK's potrf through SciPy (numpy.linalg.cholesky without
#: SciPy, which is optional), the inverse potri in the factor's own array (NumPy's LU inverse
#: without SciPy), its triangles made equal block by block (a cache-sized copy each, no n x n
#: temporary); float16 and longdouble are factorised in the dtype LAPACK has and the results
#: cast back, complex matrices take ``_inv`` and ``_det`` (checked symmetric and finite).  It
#: reads ``_lapack_wider``, ``_inv``, ``_det``, ``_symmetric`` and ``_EvaluationError``.
CHOLESKY_HELPER = '''
_cho_routines = {}  # (LAPACK routine, dtype char) -> SciPy's routine: a lookup takes microseconds
_cho_block = 128  # rows mirrored at a time when the inverse's triangles are made equal
_cho_below = _np.tri(_cho_block, k=-1, dtype=bool)  # a diagonal block's strict lower triangle


def _cho_routine(name, array):
    """SciPy's LAPACK routine for array's dtype, None without SciPy."""
    try:
        from scipy.linalg import lapack
    except ImportError:
        return None
    key = (name, array.dtype.char)
    routine = _cho_routines.get(key)
    if routine is None:
        (routine,) = lapack.get_lapack_funcs((name,), (array,))
        _cho_routines[key] = routine
    return routine


def _not_pd(name, detail):
    """The error of a value of name that is not positive definite."""
    return _EvaluationError(
        f"'{name}' is declared positive definite (pd) but its value is not: {detail}; check the data, "
        f"or leave out assumptions={{'{name}': 'pd'}} (inv and det then factorise it by LU)"
    )


def _cholesky(m, name):
    """The factor of m, the value of name: [m as factorised, its lower Cholesky factor (None:
    complex, or spent by _cho_inv), its diagonal, m's dtype, whether potrf made it, name]; an
    error unless m is symmetric positive definite with finite entries (complex: symmetric and finite)."""
    m = _np.asarray(m)
    work = m
    if m.dtype.char not in "fd":  # float32 and float64 as they are (the common case, without a lookup)
        if m.dtype.kind != "f":  # complex: LU, its errors naming the matrix
            # symmetric all the same: the compiler wrote its transpose as itself (a Hermitian m is not)
            _symmetric(m, name, "positive definite (pd)")
            if not _np.isfinite(m).all():
                raise _not_finite(name, "positive definite (pd)")
            return [m, None, None, m.dtype, False, name]
        work = m.astype(_lapack_wider.get(m.dtype.name, m.dtype))
    _symmetric(work, name, "positive definite (pd)")  # potrf reads one triangle only
    if not _np.isfinite(work).all():  # n^2 reads against the factorisation's n^3 / 3
        raise _not_finite(name, "positive definite (pd)")
    potrf = _cho_routine("potrf", work) if work.shape[0] else None
    if potrf is None:
        try:
            lower = _np.linalg.cholesky(work)
        except _np.linalg.LinAlgError:
            raise _not_pd(name, "numpy.linalg.cholesky fails on it") from None
        potrf_made = False
    else:  # the transpose: a C-ordered matrix is then Fortran-ordered, read without a copy
        lower, info = potrf(work.T, lower=1, clean=0)
        if info > 0:
            detail = f"its Cholesky factorisation breaks down at row {info - 1} (a leading minor is not positive)"
            raise _not_pd(name, detail)
        potrf_made = True
    diagonal = lower.diagonal().copy()  # kept apart: potri overwrites the factor
    if not _np.isfinite(diagonal).all():
        raise _not_pd(name, "its Cholesky factor overflows")
    return [work, lower, diagonal, m.dtype, potrf_made, name]


def _cho_mirror(a):
    """a (Fortran-ordered, its lower triangle valid) made symmetric in place, returned C-ordered."""
    t = a.T  # C-ordered, its upper triangle valid
    n = t.shape[0]
    for i in _np.arange(0, n, _cho_block).tolist():  # no builtin: the function may be named range or min
        j = i + _cho_block if i + _cho_block < n else n
        t[j:, i:j] = t[i:j, j:].T
        block = t[i:j, i:j]
        _np.copyto(block, block.T.copy(), where=_cho_below[: j - i, : j - i])
    return t


def _cho_inv(factor):
    """inv(m) in m's dtype from its factor: potri in the factor's own array, which is then spent
    (a second inverse of it is NumPy's LU one); LU without SciPy or a potrf factor."""
    work, lower, _, dtype, potrf_made, name = factor
    potri = _cho_routine("potri", lower) if potrf_made and lower is not None else None
    if potri is None:
        inverse = _inv(work, name)
    else:
        factor[1] = None  # spent: potri overwrites it
        inverse, info = potri(lower, lower=1, overwrite_c=1)
        if info != 0:  # not after a successful potrf; never a silent number
            raise _EvaluationError(f"inv: LAPACK potri failed (info {info}) after a successful factorisation")
        inverse = _cho_mirror(inverse)
    return inverse if inverse.dtype == dtype else inverse.astype(dtype)


def _cho_det(factor, log):
    """det(m) (log: log(det(m)), finite where det overflows), a 0-d array of m's dtype."""
    work, _, diagonal, dtype, _, name = factor
    if diagonal is None:  # complex: LU
        det = _det(work, name)
        return _np.log(det) if log else det
    return _np.asarray(2 * _np.sum(_np.log(diagonal)) if log else _np.prod(diagonal) ** 2, dtype=dtype)
'''

_namespace: dict = {"_np": np, "_EvaluationError": EvaluationError}
_TEXT = LAPACK_HELPER + ADJUGATE_SOURCE + LINALG_HELPER + SYMMETRIC_HELPER + CHOLESKY_HELPER + NUMBERS_HELPER
exec(compile(_TEXT, "<tenscalc linalg>", "exec"), _namespace)  # noqa: S102 - the texts above
#: the closures' inv, det and adj of NumPy arrays: :data:`LINALG_HELPER` itself
linalg_inv, linalg_det, linalg_adj = _namespace["_inv"], _namespace["_det"], _namespace["_adj"]
linalg_finite = _namespace["_finite"]
#: the closures' check of a declared symmetric NumPy array, Cholesky factor and its readers:
#: :data:`SYMMETRIC_HELPER` and :data:`CHOLESKY_HELPER` themselves
symmetric_check, not_pd, not_finite = _namespace["_symmetric"], _namespace["_not_pd"], _namespace["_not_finite"]
#: a call's value as an array of numbers, or the error every runner gives: :data:`NUMBERS_HELPER` itself
numbers_of: Callable[[Any, str], np.ndarray] = _namespace["_numbers"]
not_numbers: Callable[[str, Any], EvaluationError] = _namespace["_not_numbers"]
#: its error for an entry [i, j] that is not [j, i] (Dask's chunked check finds them block by block)
not_symmetric = _namespace["_asymmetric"]
#: whether a gap is rounding, and its allowance in eps x n max|m| (JAX's traced check reads the number)
rounding_gap, SYMMETRY_ULPS = _namespace["_rounding_gap"], _namespace["_SYMMETRY_ULPS"]
cholesky_factor, cholesky_inv, cholesky_det = _namespace["_cholesky"], _namespace["_cho_inv"], _namespace["_cho_det"]
mirror_block: int = _namespace["_cho_block"]
#: a Fortran-ordered array whose lower triangle holds a symmetric matrix, made whole (JAX's potri)
cholesky_mirror = _namespace["_cho_mirror"]

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
    | {"_cho_routines", "_cho_block", "_cho_below", "_cho_routine", "_not_pd", "_not_finite", "_cho_mirror"}
    | {"_asymmetric", "_rounding_gap", "_SYMMETRY_ULPS", "_numbers", "_not_numbers"}
    | {"_inv", "_det", "_adj", "_finite", "_EvaluationError", "_matrix_error", "_matrix_problems"}
    | {"_accumulate", "_add_into", "_write_bands", "_min", "_max", "_zip", "_block_rows"}
    | {"_outer_columns", "_stretch", "_contract_late", "_empty_sums"}
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


#: builtins the generated function's body calls by name (``slice(0, 5, 1)`` keys, dtype
#: tests): a variable of such a name is read from ``**_others`` under ``_v_<name>``, since
#: a parameter of that name would hide the builtin in the whole body
CALLED_BUILTINS = frozenset({"slice", "type", "float", "complex", "int", "bool", "str", "min", "max", "zip", "any"})
CALLED_BUILTINS |= {"isinstance", "tuple"}


def python_names(variables: Iterable[str]) -> dict[str, str]:
    """Variable name -> its name inside the generated function (a keyword renamed ``_v_<name>``).

    Names starting with ``_`` are refused: the generated code's own names all do.
    """
    names = {}
    for variable in sorted(variables):
        check_identifier(variable, "variable name")
        if variable.startswith("_"):
            raise TensCalcError(f"variable name {variable!r}: names starting with '_' are reserved in generated code")
        names[variable] = f"_v_{variable}" if keyword.iskeyword(variable) or variable in CALLED_BUILTINS else variable
    return names


def signature(name: str, names: Mapping[str, str]) -> list[str]:
    """The ``def`` line and the lines reading keyword-named variables (unindented body lines
    after the first)."""
    plain = [python for variable, python in names.items() if python == variable]
    head = f"def {name}(*, {', '.join(plain)}, **_others):" if plain else f"def {name}(**_others):"
    lines = [head]
    for variable, python in names.items():
        if python != variable and keyword.iskeyword(variable):  # only f(**{"lambda": ...}) can pass it
            lines.append(f"# '{variable}' is a Python keyword: pass it as {name}(**{{'{variable}': value, ...}})")
            lines.append(f"if {variable!r} not in _others:")
            lines.append(
                f"    raise _TypeError(\"{name}() missing the argument '{variable}': pass it as "
                f"{name}(**{{'{variable}': value, ...}})\")"
            )
            lines.append(f"{python} = _others[{variable!r}]")
        elif python != variable:  # a builtin the body calls (CALLED_BUILTINS): f(slice=...) as usual
            lines.append(f"if {variable!r} not in _others:")
            lines.append(f"    raise _TypeError(\"{name}() missing the keyword argument '{variable}'\")")
            lines.append(f"{python} = _others[{variable!r}]")
    return lines


def input_lines(names: Mapping[str, str]) -> list[str]:
    """The lines making each input (its name -> its Python name) an array of numbers, as every
    runner does (:data:`NUMBERS_HELPER`), after :func:`dtype_line` has read them as passed.

    >>> input_lines({"x": "x", "lambda": "lambda_"})
    ["x = _numbers(x, 'x')", "lambda_ = _numbers(lambda_, 'lambda')"]
    """
    return [f"{python} = _numbers({python}, {name!r})" for name, python in names.items()]


def dtype_line(names: Mapping[str, str]) -> str:
    """The body line setting ``_dtype``, the results' dtype, from the values as passed (before
    they are made arrays: a Python number is weak, as in NumPy and ``tc.compile``)."""
    inputs = list(names.values())
    if inputs:
        return f"_dtype = _dtype_of(({', '.join(inputs)},))"
    return "_dtype = _dtype_of(_others.values())"
