"""The PSD templates: terms that are PSD together though not one by one.

After :mod:`.expansion` has distributed a Hessian into terms, two templates
combine them, checked on monomials (:mod:`.algebra`):

* **Cauchy-Schwarz** (:func:`cauchy_schwarz`) --
  ``diag(y⊙z⊙y) - (y⊙z)(y⊙z)ᵀ / (a (b + sum z))`` with ``z >= 0``, ``a >= 1``,
  ``b >= 0``: a diagonal term ``D`` and a rank-one term ``-u uᵀ / t`` combine to a
  PSD matrix when ``sum_l u_l^2 / D_l <= t`` (for every batch index);
* **combined diagonals** (:func:`merged_diagonal`) -- diagonal terms whose
  entries sum to a nonnegative rational function.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..core import nodes as N
from ..core.nodes import Expr
from .algebra import expand, mono_mul, mono_pow, monomial_interval, poly_rational_interval
from .congruence import Normalized, normalize_term
from .derivation import FactSource, Perm, short_text
from .facts import Curvature, Interval, number_text


def _interval_of(an: FactSource):
    def get(node: Expr) -> Interval | None:
        return an.interval(node)

    return get


def _product_monomial(an, pairs, position_of, opaque=frozenset()) -> tuple[float, tuple] | None:
    """Monomial (with its constant) of a product of operands whose letters map to positions."""
    value = 1.0
    mono: tuple = ()
    for child, spec in pairs:
        try:
            positions = tuple(position_of[a] for a in spec)
        except KeyError:
            return None
        poly = expand(child, positions, _interval_of(an), opaque=opaque)
        if poly is None or len(poly) != 1:
            return None
        ((m, c),) = poly.items()
        value *= c
        mono = mono_mul(mono, m)
    return value, mono


def _mono_interval(an, mono) -> Interval:
    return monomial_interval(mono, _interval_of(an))


def _canonical(mono) -> tuple:
    return tuple(sorted((a[0].serial, a[1], round(float(e), 9)) for a, e in mono))


@dataclass
class _Frame:
    """How a term's letters map to monomial positions: output axes 0..k-1 (a right
    letter to its partner's position), summed "batch" letters k, k+1, ..."""

    norm: Normalized
    position_of: dict[int, int]
    batch: list[int]
    node: Expr


def _frame(an, t: Expr, coef: float, k: int, perm: Perm, graph) -> _Frame | None:
    if t.op != "mul":
        return None
    ins, out = t.arg
    norm = normalize_term(list(zip(t.children, ins)), out, k, perm, coef)
    if norm is None or norm.count_factor:
        return None
    position_of: dict[int, int] = {}
    for s_, a in enumerate(norm.left):
        position_of[a] = s_
    for s_, b in enumerate(norm.right):
        if position_of.get(b, s_) != s_:
            return None
        position_of[b] = s_
    summed = sorted({a for _, spec in norm.operands for a in spec} - set(position_of))
    slots = graph.letter_slots.get(t) if graph is not None else None
    if summed:
        # order the batch letters by their axis class, so that two terms agree
        if slots is None or any(a not in slots for a in summed):
            return None
        classes = [graph.find(slots[a]) for a in summed]
        if len(set(classes)) != len(classes):
            return None
        summed = [a for _, a in sorted(zip(classes, summed))]
    for j, a in enumerate(summed):
        position_of[a] = k + j
    return _Frame(norm, position_of, summed, t)


def _batch_classes(graph, frame: _Frame) -> tuple:
    slots = graph.letter_slots.get(frame.node) if graph is not None else None
    if not frame.batch:
        return ()
    return tuple(graph.find(slots[a]) for a in frame.batch)


def split_sides(operands, left_letters: set, right_letters: set):
    """The operands of a product read as a matrix: those with left letters, those
    with right letters and those with neither; None when one has both (then the
    product does not factor into a left and a right part)."""
    left, right, neither = [], [], []
    for child, spec in operands:
        letters = set(spec)
        if letters & left_letters and letters & right_letters:
            return None
        group = left if letters & left_letters else right if letters & right_letters else neither
        group.append((child, spec))
    return left, right, neither


def _diag_form(an, frame: _Frame, opaque):
    """``D(l, r) = sum_B A(l_c, B) A(r_c, B) [l_t = r_t] d(l_t, B)``: (value, pc, A monomial,
    d monomial), where pc are the positions of the congruence factor A."""
    norm = frame.norm
    k = len(norm.left)
    pt = [t for t in range(k) if norm.left[t] == norm.right[t]]
    if not pt:
        return None
    pc = [t for t in range(k) if t not in pt]
    lc = {norm.left[t] for t in pc}
    rc = {norm.right[t] for t in pc}
    diag_letters = {norm.left[t] for t in pt}
    sides = split_sides(norm.operands, lc, rc)
    if sides is None:
        return None
    a_left, a_right, rest = sides
    if any(set(spec) & diag_letters for _, spec in a_left + a_right):
        return None
    gl = _product_monomial(an, a_left, frame.position_of, opaque)
    gr = _product_monomial(an, a_right, frame.position_of, opaque)
    gd = _product_monomial(an, rest, frame.position_of, opaque)
    if gl is None or gr is None or gd is None or _canonical(gl[1]) != _canonical(gr[1]):
        return None
    return norm.coef * gl[0] * gr[0] * gd[0], tuple(pc), gl[1], gd[1]


def _rank_form(an, frame: _Frame, pc: tuple, opaque):
    """``R(l, r) = sum_B A(l_c, B) A(r_c, B) h(B) u(l_t, B) u(r_t, B)``: (value, A, u, h)."""
    norm = frame.norm
    k = len(norm.left)
    if len(set(norm.left) | set(norm.right)) != 2 * k:
        return None
    lset, rset = set(norm.left), set(norm.right)
    sides = split_sides(norm.operands, lset, rset)
    if sides is None:
        return None
    lefts, rights, scalars = sides
    gl = _product_monomial(an, lefts, frame.position_of, opaque)
    gr = _product_monomial(an, rights, frame.position_of, opaque)
    gs = _product_monomial(an, scalars, frame.position_of, opaque)
    if gl is None or gr is None or gs is None or _canonical(gl[1]) != _canonical(gr[1]):
        return None
    pcs, pts = set(pc), set(range(k)) - set(pc)
    a_part, u_part, h_part = [], [], list(gs[1])
    for atom, e in gl[1]:
        positions = {p for p in atom[1] if p < k}
        if positions & pcs and positions & pts:
            return None
        if positions & pcs:
            a_part.append((atom, e))
        elif positions & pts:
            u_part.append((atom, e))
        else:  # depends on batch letters only: appears on both sides, a square
            h_part.append((atom, 2 * e))
    h = ()
    for atom, e in h_part:
        h = mono_mul(h, ((atom, e),))
    return norm.coef * gl[0] * gr[0] * gs[0], tuple(a_part), tuple(u_part), h


def cauchy_schwarz(an: FactSource, terms, parts, perms, sign: int, opaque=frozenset()):
    """Pair each non-PSD term ``-sum_B (a aᵀ) ⊗ h u uᵀ`` with a term ``sum_B (a aᵀ) ⊗ diag(d)``
    such that, for every batch index B, ``h sum_l u_l^2 / d_l <= 1`` (Cauchy-Schwarz):
    then ``(a aᵀ) ⊗ (diag(d) - h u uᵀ)`` is PSD for each B.  The other terms must be PSD.
    ``sign=-1`` checks NSD instead (all coefficients negated)."""
    from ..core.axes import axis_graph

    k = terms[0][1].order // 2
    members = [t for _, t in terms]
    specs, start = [], 0
    for node in members:
        specs.append(tuple(range(start, start + node.order)))
        start += node.order
    try:
        graph = axis_graph(N.mul(members, specs, tuple(range(start))))
    except Exception:  # noqa: BLE001 - no axis information: no claim
        return None
    for perm in perms:
        frames = [_frame(an, t, c * sign, k, perm, graph) for c, t in terms]
        used: set[int] = set()
        ok = True
        notes = []
        for i, part in enumerate(parts):
            signed = part if sign > 0 else part.negated()
            if signed.psd:
                continue
            if frames[i] is None:
                ok = False
                break
            found = None
            for j, frame_d in enumerate(frames):
                if j == i or j in used or frame_d is None:
                    continue
                if _batch_classes(graph, frame_d) != _batch_classes(graph, frames[i]):
                    continue
                diag = _diag_form(an, frame_d, opaque)
                if diag is None or diag[0] <= 0:
                    continue
                rank = _rank_form(an, frames[i], diag[1], opaque)
                if rank is None or rank[0] >= 0:
                    continue
                check = _cs_condition(an, graph, diag, rank, frames[i], opaque)
                if check is not None:
                    found = (j, check)
                    break
            if found is None:
                ok = False
                break
            used.add(found[0])
            notes.append(found[1])
        if ok and notes:
            remaining = [(p if sign > 0 else p.negated()) for i, p in enumerate(parts) if i not in used]
            remaining = [p for p in remaining if p.psd]
            curv = Curvature(psd=True, symmetric=all(p.symmetric for p in remaining))
            return (curv if sign > 0 else curv.negated()), "; ".join(notes)
    return None


def _cs_condition(an, graph, diag, rank, frame: _Frame, opaque) -> str | None:
    """Whether ``D + R`` is PSD: ``sum_l |c_R| h u_l^2 / (c_D d_l) <= 1`` for every batch index."""
    d_value, pc, a_diag, d_mono = diag
    r_value, a_rank, u_mono, h_mono = rank
    if _canonical(a_diag) != _canonical(a_rank):
        return None
    iv = _interval_of(an)
    if not _mono_interval(an, d_mono).scale(d_value).nonneg or not _mono_interval(an, h_mono).nonneg:
        return None
    k = len(frame.norm.left)
    ratio_value = -r_value / d_value
    ratio = mono_mul(mono_mul(h_mono, mono_pow(u_mono, 2)), mono_pow(d_mono, -1))
    # division by d is only allowed where d = 0 forces u = 0
    u2 = dict(mono_pow(u_mono, 2))
    for atom, e in d_mono:
        if e > 0 and not (iv(atom[0]) or Interval.real()).nonzero and u2.get(atom, 0) < e:
            return None
    pt = [t for t in range(k) if t not in pc]
    for atom, e in ratio:
        if abs(e + 1) > 1e-9 or any(p < k for p in atom[1]):
            continue
        rest = tuple((a, x) for a, x in ratio if a != atom)
        if any(all(p >= k for p in a[1]) for a, _ in rest):
            continue
        bound = _sum_bound(an, graph, atom, rest, ratio_value, frame, pt, opaque)
        if bound is not None:
            return bound
    return None


def _linear_parts(node: Expr, coef: float = 1.0, depth: int = 0) -> list[tuple[float, Expr]]:
    if node.op == "add" and depth < 6:
        out = []
        for child, c in zip(node.children, node.arg):
            out.extend(_linear_parts(child, coef * c, depth + 1))
        return out
    return [(coef, node)]


def _sum_bound(an, graph, atom, rest, C: float, frame: _Frame, pt: list[int], opaque) -> str | None:
    """``sum_l C rest(l, B) <= denominator(B)`` where ``rest`` is the summand of a sum node
    ``s(B) = sum_l w(l, B)`` and the denominator is ``alpha s + (terms >= 0)`` with ``alpha >= C``."""
    denominator, atom_positions = atom
    parts = _linear_parts(denominator)
    for _alpha, s in parts:
        if s.op != "mul" or s.order != len(atom_positions):
            continue
        others = [(c, n) for c, n in parts if n is not s]
        alpha_total = sum(c for c, n in parts if n is s)
        if alpha_total <= 0 or not all(an.interval(n).scale(c).nonneg for c, n in others):
            continue
        ins, out = s.arg
        if len(set(out)) != len(out):
            continue
        summed = sorted(set().union(*ins) - set(out))
        if len(summed) != len(pt):
            continue
        for order in itertools.permutations(pt):
            position_of = {a: order[i] for i, a in enumerate(summed)}
            position_of.update({a: atom_positions[j] for j, a in enumerate(out)})
            got = _product_monomial(an, list(zip(s.children, ins)), position_of, opaque)
            if got is None:
                continue
            value, mono = got
            if value <= 0 or _canonical(mono) != _canonical(rest):
                continue
            if C / value > alpha_total * (1 + 1e-12):
                continue
            if not _mono_interval(an, mono).scale(value).nonneg:
                continue
            if not _same_lengths(graph, frame, s, summed, order, out, atom_positions):
                continue
            extra = " + nonnegative terms" if others else ""
            batch = " for each batch index" if frame.batch else ""
            return (
                f"diag(D) - h u uᵀ with sum_l h u_l²/D_l = {number_text(C / value)} · sum / "
                f"({number_text(alpha_total)} · sum{extra}) <= 1{batch}, where sum = {short_text(s, 60)}"
            )
    return None


def _same_lengths(graph, frame: _Frame, s: Expr, summed, order, out, atom_positions) -> bool:
    """The letters of ``s`` run over the same axes as the positions they are matched to."""
    slots = graph.letter_slots.get(s)
    term_slots = graph.letter_slots.get(frame.node)
    if slots is None or term_slots is None:
        return False
    classes = graph.classes(frame.node)
    k = len(frame.norm.left)
    for a, p in list(zip(summed, order)) + list(zip(out, atom_positions)):
        if p < k:
            target = classes[p]
        else:
            target = graph.find(term_slots[frame.batch[p - k]])
        if graph.find(slots[a]) != target:
            return False
    return True


def merged_diagonal(an: FactSource, terms, parts, perms, sign: int, opaque=frozenset()):
    """The diagonal terms together form ``diag(sum_t c_t d_t)``: PSD when that entry is
    >= 0 (decided after clearing denominators and cancelling); the rest must be PSD."""
    k = terms[0][1].order // 2
    for perm in perms:
        total: dict = {}
        used = []
        for i, (c, t) in enumerate(terms):
            frame = _frame(an, t, c * sign, k, perm, None)
            if frame is None or frame.batch:
                continue
            diag = _diag_form(an, frame, opaque)
            if diag is None or diag[1]:
                continue
            value, _pc, _a, mono = diag
            total[mono] = total.get(mono, 0) + value
            used.append(i)
        if len(used) < 2:
            continue
        rest = [(p if sign > 0 else p.negated()) for i, p in enumerate(parts) if i not in used]
        entry = poly_rational_interval({m: v for m, v in total.items() if v != 0}, _interval_of(an), opaque)
        if entry is None:
            continue
        psd = entry.nonneg and all(p.psd for p in rest)
        nsd = entry.nonpos and all(p.nsd for p in rest)
        if not (psd or nsd):
            continue
        curv = Curvature(psd=psd, nsd=nsd, symmetric=all(p.symmetric for p in rest))
        note = f"the {len(used)} diagonal terms sum to a diagonal with entries {entry.describe()}"
        return (curv if sign > 0 else curv.negated()), note
    return None
