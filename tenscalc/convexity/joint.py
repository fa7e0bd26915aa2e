"""Joint convexity: the Hessian blocks of several variables as one Gram form.

For variables ``x, y`` the Hessian is the block matrix ``[[H_xx, H_xy], [H_yx,
H_yy]]``.  Its quadratic form ``q(v) = sum_ab v_aᵀ H_ab v_b`` is certified by
writing every term of every block (after distributing products over sums) as

    H_ab(l, r) = sum_S F(l, S) · m(S) · G(r, S)

with ``F`` the operands touching the left axes, ``G`` those touching the right
axes and ``m`` the rest, over the shared letters ``S``.  Each ``F`` (paired with
its variable) is a linear form ``φ(S) = <v_a, F(., S)>``; identical forms are
identified across terms and blocks, so that

    q(v) = sum_S sum_ij C_ij(S) φ_i(S) φ_j(S),

and ``q >= 0`` when the small matrix ``C(S)`` of coefficients (polynomials in the
other nodes) is PSD for every ``S``: checked entry-wise for one form, by the
diagonal and the determinant for two (after clearing denominators and
cancelling), as a nonnegative multiple of an exactly-PSD constant matrix for more.
This is the congruence rule with a stacked factor ``[A_x A_y]``: it covers
``|x - y|^2``, ``x^2/y`` and the logistic loss with a bias.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

from ..core import nodes as N
from ..core.axes import axis_graph
from ..core.nodes import Expr
from .algebra import Poly, cancel, expand, opaque_bases, poly_add, poly_mul, poly_rational_interval
from .analysis import Analyzer
from .congruence import ones_value
from .derivation import Derivation
from .expansion import expand_terms
from .facts import Curvature
from .psd_templates import split_sides

_ID = "identity"


class _Fail(Exception):
    pass


def flatten(node: Expr) -> Expr:
    """``node`` with the products among its operands inlined: one einsum, whose summed
    letters are all visible (``2 *(,->) (x^2 *(i,->) t^-3)`` becomes one product over
    ``i``), so that a sum inside an operand can be a shared letter of a Gram form.

    >>> import tenscalc as tc
    >>> e = tc.parse("2 *(,->) (x *(i,i->) x)", {"x": 1})
    >>> flatten(e).arg
    (((), (0,), (0,)), ())
    """
    if node.op != "mul":
        return node
    ins, out = node.arg
    top = max([max(spec, default=-1) for spec in ins] + [max(out, default=-1)]) + 1
    counter = itertools.count(top)
    operands: list[Expr] = []
    specs: list[tuple[int, ...]] = []
    changed = False
    for child, spec in zip(node.children, ins):
        child = flatten(child)
        if child.op != "mul" or len(set(child.arg[1])) != len(child.arg[1]):
            operands.append(child)
            specs.append(tuple(spec))
            continue
        c_ins, c_out = child.arg
        rename = {letter: spec[p] for p, letter in enumerate(c_out)}
        for c_spec in c_ins:
            for letter in c_spec:
                if letter not in rename:
                    rename[letter] = next(counter)
        operands.extend(child.children)
        specs.extend(tuple(rename[a] for a in c_spec) for c_spec in c_ins)
        changed = True
    return N.mul(operands, specs, out) if changed else node


def _promote(left, right, middle, left_letters, right_letters, counter):
    """Read a side whose operands touch only that side's letters (``x[i] t^-2``, a scalar
    broadcast against a vector) as identity forms: ``F(l) = sum_s [l = s] F(s)`` moves
    ``F`` into the middle and makes ``s`` a shared letter."""
    extra_middle = []
    sides = []
    for group, letters in ((left, left_letters), (right, right_letters)):
        letters_set = set(letters)
        if (
            not group
            or any(child is _ID for child, _ in group)
            or any(not set(spec) <= letters_set for _, spec in group)
        ):
            sides.append(group)
            continue
        fresh = {letter: next(counter) for letter in letters}
        identities = [(_ID, (letter, fresh[letter])) for letter in letters]
        extra_middle.extend((child, tuple(fresh[a] for a in spec)) for child, spec in group)
        sides.append(identities)
    return sides[0], sides[1], middle + extra_middle


def _decompose(coef: float, node: Expr, ka: int, kb: int, promote: bool = False):
    """(coef, left ops, right ops, middle ops, S letters) of one term; ops are
    (node or _ID, spec)."""
    if node.op == "mul":
        ins, out = node.arg
        ops = list(zip(node.children, ins))
    else:
        out = tuple(range(node.order))
        ops = [(node, out)]
    out = list(out)
    counter = itertools.count(max([max(s, default=-1) for _, s in ops] + [max(out, default=-1)]) + 1)
    left_letters = out[:ka]
    right_letters = out[ka:]
    extra: list[tuple[object, tuple[int, ...]]] = []
    # a letter on both sides (a written diagonal) is a shared letter with identity factors
    for t, letter in enumerate(left_letters):
        if letter in right_letters:
            u = right_letters.index(letter)
            a, b = next(counter), next(counter)
            left_letters[t], right_letters[u] = a, b
            extra += [(_ID, (a, letter)), (_ID, (b, letter))]
    if len(set(left_letters)) != len(left_letters) or len(set(right_letters)) != len(right_letters):
        raise _Fail
    lset, rset = set(left_letters), set(right_letters)
    kept = []
    for child, spec in ops:
        if child.op == "delta" and child.arg > 0:
            n = child.arg
            for t in range(n):
                p, q = spec[t], spec[n + t]
                if (p in lset and q in rset) or (p in rset and q in lset):
                    s = next(counter)
                    extra += [(_ID, (p, s)), (_ID, (q, s))]
                else:
                    raise _Fail
            continue
        value = ones_value(child)
        if value is not None:
            coef *= value
            if set(spec) & (lset | rset):
                kept.append((N.const(1, child.order), spec))
            continue
        kept.append((child, spec))
    ops = kept + extra
    sides = split_sides(ops, lset, rset)
    if sides is None:
        raise _Fail
    left, right, middle = sides
    if promote:
        left, right, middle = _promote(left, right, middle, left_letters, right_letters, counter)
    lettersof = lambda group: set().union(*(set(s) for _, s in group)) if group else set()  # noqa: E731
    shared = lettersof(middle) | (lettersof(left) & lettersof(right))
    return coef, left_letters, right_letters, left, right, middle, shared


def _serial(child) -> int:
    return -1 if child is _ID else child.serial


def _order_shared(middle, left, right, shared) -> list[int]:
    order: list[int] = []
    for group in (middle, left, right):
        for _child, spec in sorted(group, key=lambda p: (_serial(p[0]), len(p[1]))):
            for letter in spec:
                if letter in shared and letter not in order:
                    order.append(letter)
    return order


def _signature(group, side_letters, shared_index) -> tuple:
    """A canonical description of a factor: operands with letters named by role."""

    def role(letter, private):
        if letter in side_letters:
            return ("L", side_letters.index(letter))
        if letter in shared_index:
            return ("S", shared_index[letter])
        return ("P", private.setdefault(letter, len(private)))

    masked = sorted(
        group,
        key=lambda p: (
            _serial(p[0]),
            tuple(
                ("L", side_letters.index(a))
                if a in side_letters
                else ("S", shared_index[a])
                if a in shared_index
                else ("P", 0)
                for a in p[1]
            ),
        ),
    )
    private: dict[int, int] = {}
    return tuple((_serial(child), tuple(role(a, private) for a in spec)) for child, spec in masked)


def gram_rule(
    an: Analyzer,
    blocks: dict[tuple[str, str], Expr],
    names: list[str],
    orders,
    root: Expr | None = None,
    promote: bool = False,
) -> Derivation | None:
    """Certify the block Hessian PSD or NSD as a Gram form (see the module docstring).

    With ``promote`` the products are flattened and a side whose factors touch only
    its own letters is read through identity forms (a scalar broadcast against a
    vector: ``‖x‖²/t``, a ones column, an identity block).
    """
    terms = []
    for (a, b), block in blocks.items():
        expanded = expand_terms(block)
        if expanded is None:
            return None
        for coef, node in expanded:
            if node.op == "const" and node.arg[0] == 0 or coef == 0:
                continue
            terms.append((a, b, coef, flatten(node) if promote else node))
    if not terms:
        return Derivation(Curvature.zero_matrix(), "joint Gram form", "every block is zero")
    # one axis graph for all terms, to compare the index sets of shared letters
    # (with the function itself, whose sums tie the axes of the variables together)
    members = [t[3] for t in terms] + ([root] if root is not None else [])
    combined_specs, start = [], 0
    for node in members:
        combined_specs.append(tuple(range(start, start + node.order)))
        start += node.order
    combined = N.mul(members, combined_specs, tuple(range(start)))
    try:
        graph = axis_graph(combined)
    except Exception:  # noqa: BLE001 - no axis information: no claim
        return None
    opaque = opaque_bases([t[3] for t in terms])
    groups: dict[tuple, dict] = {}
    for a, b, coef, node in terms:
        try:
            c, lletters, rletters, left, right, middle, shared = _decompose(coef, node, orders[a], orders[b], promote)
        except _Fail:
            return None
        order = _order_shared(middle, left, right, shared)
        index = {letter: i for i, letter in enumerate(order)}
        slots = graph.letter_slots.get(node) if node.op == "mul" else None
        classes = []
        for letter in order:
            if slots is None or letter not in slots:
                classes.append(("?", letter))  # an identity's fresh letter: its axis is the variable's
            else:
                classes.append(graph.find(slots[letter]))
        if any(isinstance(cl, tuple) for cl in classes):
            # identity letters: tie them to the axes of the variables through the output
            classes = _identity_classes(graph, node, order, left, right, lletters, rletters, slots)
            if classes is None:
                return None
        form_l = (a, _signature(left, lletters, index))
        form_r = (b, _signature(right, rletters, index))
        poly: Poly = {(): c}
        for child, spec in middle:
            part = expand(child, tuple(index[x] for x in spec), _interval(an), opaque=opaque)
            if part is None:
                return None
            poly = poly_mul(poly, part)
            if poly is None:
                return None
        group = groups.setdefault(tuple(classes), {"forms": [], "C": {}})
        for form in (form_l, form_r):
            if form not in group["forms"]:
                group["forms"].append(form)
        key = (form_l, form_r)
        group["C"][key] = poly_add(group["C"].get(key, {}), poly)
        if group["C"][key] is None:
            return None
    psd = nsd = True
    notes = []
    for group in groups.values():
        forms = group["forms"]
        n = len(forms)
        if n > 4:
            return None
        matrix = [[{} for _ in range(n)] for _ in range(n)]
        for (fl, fr), poly in group["C"].items():
            i, j = forms.index(fl), forms.index(fr)
            for m, v in poly.items():
                matrix[i][j][m] = matrix[i][j].get(m, 0) + v / 2
                matrix[j][i][m] = matrix[j][i].get(m, 0) + v / 2
        matrix = [[cancel(e) for e in row] for row in matrix]
        g_psd = _psd(an, matrix, opaque, 1)
        g_nsd = _psd(an, matrix, opaque, -1)
        psd, nsd = psd and g_psd, nsd and g_nsd
        if not (psd or nsd):
            return None
        notes.append(f"{n} linear form{'s' if n > 1 else ''} of the directions")
    curv = Curvature(psd=psd, nsd=nsd, symmetric=True)
    detail = (
        "q(v) = sum_S sum_ij C_ij(S) φ_i(S) φ_j(S) with C(S) " + ("PSD" if psd else "NSD") + "; " + ", ".join(notes)
    )
    return Derivation(curv, "joint Gram form (stacked congruence)", detail, [b for b in blocks.values()])


def _identity_classes(graph, node, order, left, right, lletters, rletters, slots):
    classes = []
    for letter in order:
        if slots is not None and letter in slots:
            classes.append(graph.find(slots[letter]))
            continue
        # an identity (_ID, (side letter, s)): s runs over the side letter's output axis
        found = None
        for child, spec in left + right:
            if child is _ID and spec[1] == letter:
                side = spec[0]
                # a bare identity (delta(1){x.0}) is its own output
                out = node.arg[1] if node.op == "mul" else tuple(range(node.order))
                positions = [p for p, x in enumerate(out) if x == side]
                if not positions:
                    # a renamed diagonal letter: the shared letter itself is an output letter
                    positions = [p for p, x in enumerate(out) if x == letter]
                if positions:
                    found = graph.classes(node)[positions[0]]
                break
        if found is None:
            return None
        classes.append(found)
    return classes


def _interval(an: Analyzer):
    def get(node: Expr):
        return an.interval(node)

    return get


def _sign_of(an, poly: Poly, opaque, sign: int):
    iv = poly_rational_interval(poly, _interval(an), opaque) if poly else None
    if not poly:
        return True
    if iv is None:
        return False
    return iv.nonneg if sign > 0 else iv.nonpos


def _psd(an, matrix, opaque, sign: int) -> bool:
    n = len(matrix)
    if n == 1:
        return _sign_of(an, matrix[0][0], opaque, sign)
    if n == 2:
        a, b, c = matrix[0][0], matrix[0][1], matrix[1][1]
        if not (_sign_of(an, a, opaque, sign) and _sign_of(an, c, opaque, sign)):
            return False
        ac = poly_mul(a, c)
        bb = poly_mul(b, b)
        if ac is None or bb is None:
            return False
        det = poly_add(ac, bb, -1)
        return det is not None and _sign_of(an, cancel(det), opaque, 1)
    # a common polynomial times a constant matrix
    base = None
    for row in matrix:
        for entry in row:
            if entry:
                base = entry
                break
        if base is not None:
            break
    if base is None:
        return True
    (m0, c0) = next(iter(base.items()))
    constants = [[Fraction(0)] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            entry = matrix[i][j]
            if not entry:
                continue
            ratio = None
            for m, v in entry.items():
                if m not in base:
                    return False
                r = v / base[m]
                if ratio is None:
                    ratio = r
                elif abs(r - ratio) > 1e-12 * max(1.0, abs(ratio)):
                    return False
            if set(entry) != set(base):
                return False
            constants[i][j] = Fraction(ratio).limit_denominator(10**12)
    if not _sign_of(an, base, opaque, sign):
        return False
    return _exact_psd(constants)


def _exact_psd(m: list[list[Fraction]]) -> bool:
    """PSD test of a small rational symmetric matrix by exact elimination."""
    n = len(m)
    a = [row[:] for row in m]
    for k in range(n):
        pivot = a[k][k]
        if pivot < 0:
            return False
        if pivot == 0:
            if any(a[k][j] != 0 for j in range(k, n)):
                return False
            continue
        for i in range(k + 1, n):
            factor = a[i][k] / pivot
            for j in range(k, n):
                a[i][j] -= factor * a[k][j]
    return True
