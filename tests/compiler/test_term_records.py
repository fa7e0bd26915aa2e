"""Each einsum term is decided once, as data (issue 26, "decisions as data").

The binder (:func:`tenscalc.compiler.program._bind_term`) and the source writer of
``tc.to_python(shapes=)`` read one frozen :class:`~tenscalc.compiler.terms.TermPlan`
per term and shape signature: over the runners' corpus no term is planned twice and no
contraction path is searched twice while ``to_python(shapes=)`` binds and writes, and
the writer's records are the very objects the binder built its closures from.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

import tenscalc as tc
from tenscalc.compiler import closures as closures_module
from tenscalc.compiler import program as program_module
from tenscalc.compiler import terms as terms_module
from tenscalc.compiler.backends import get_backend
from tenscalc.compiler.plan import build_plan
from tenscalc.compiler.program import ShapeResolver, bind
from tenscalc.compiler.source import ProgramSource
from tenscalc.core.axes import axis_graph
from tests.compiler.test_runners import CORPUS, NAMES


def _counting(monkeypatch: pytest.MonkeyPatch) -> tuple[Counter, Counter]:
    """Counters of the records planned (by term key) and the paths searched (by equation
    and shapes), wherever the binder or the writer asks."""
    planned: Counter = Counter()
    searched: Counter = Counter()
    plan, search = terms_module._plan, program_module.choose_path

    def counted_plan(term, shape, shapes, resolver, gram, path_search):
        planned[(term, shape, tuple(shapes[slot] for slot, _ in term.operands), gram)] += 1
        return plan(term, shape, shapes, resolver, gram, path_search)

    def counted_search(eq, op_shapes, out_size):
        searched[(eq, tuple(op_shapes), out_size)] += 1
        return search(eq, op_shapes, out_size)

    monkeypatch.setattr(terms_module, "_plan", counted_plan)
    monkeypatch.setattr(program_module, "choose_path", counted_search)
    return planned, searched


@pytest.mark.parametrize("name", NAMES)
def test_to_python_decides_each_term_once(name, monkeypatch):
    build, shapes = CORPUS[name]
    exprs = build()
    planned, searched = _counting(monkeypatch)
    source = tc.to_python(exprs, shapes=shapes)
    assert "def f(" in source
    assert planned, "the corpus case binds at least one einsum term"
    assert max(planned.values()) == 1, [key for key, n in planned.items() if n > 1]
    assert max(searched.values(), default=1) == 1, [key for key, n in searched.items() if n > 1]


def _bound_and_written(name: str) -> tuple[dict, list]:
    """The binder's records (by id) and those the source writer wrote, for one corpus case."""
    made, writer = _binder_and_writer(name)
    return made, writer.records


def _binder_and_writer(name: str) -> tuple[dict, ProgramSource]:
    """The binder's records (by id) and the source writer that wrote its program."""
    build, shapes = CORPUS[name]
    roots = build()
    graphs = [axis_graph(roots[0] if len(roots) == 1 else tuple(roots))]
    planner = ShapeResolver(graphs, shapes, estimate=True)
    bound = bind(build_plan(list(roots)), planner, get_backend("numpy"))
    assert bound.bound_plan is not None
    made = {id(record): record for record in planner.terms.values()}
    writer = ProgramSource(bound, ShapeResolver(graphs, shapes))
    writer.write({slot: n for n, slot in bound.bound_plan.inputs.items()})
    return made, writer


# every case: those whose products the binder rewrites too (shared pairs hoisted: mlp,
# Rayleigh; diagonal cores: matfac, order 4, broadcast sum; Cholesky readers: inv and det)
@pytest.mark.parametrize("name", NAMES)
def test_source_writes_the_binders_own_records(name):
    made, written = _bound_and_written(name)
    assert written, "the writer wrote einsum terms"
    assert all(id(record) in made for record in written), [r.eq for r in written if id(r) not in made]
    # and every record the binder bound is written: no term of the program is left out
    assert {id(record) for record in written} == set(made)


def test_the_gram_hessian_is_written_from_the_binders_gram_record():
    made, written = _bound_and_written("logreg (Gram Hessian)")
    grams = [record for record in written if record.gram is not None]
    assert len(grams) == 1 and id(grams[0]) in made
    assert grams[0].scale_at is None  # the Gram kernel takes the factor itself


@pytest.mark.parametrize("name", NAMES)
def test_source_writes_each_op_of_the_bound_program_once(name):
    """The generated function is the bound program op by op: one statement naming each
    op's slot (a shared pair hoisted once, a diagonal core, a dense twin), none other."""
    build, shapes = CORPUS[name]
    roots = build()
    graphs = [axis_graph(roots[0] if len(roots) == 1 else tuple(roots))]
    bound = bind(build_plan(list(roots)), ShapeResolver(graphs, shapes, estimate=True), get_backend("numpy"))
    writer = ProgramSource(bound, ShapeResolver(graphs, shapes))
    lines = writer.write({slot: n for n, slot in bound.bound_plan.inputs.items()})
    named = Counter(line.split(" = ")[0] for line in lines if re.match(r"_[sf]\d+ = ", line))
    unused = {slot for slot, step in bound.steps.items() if step.factor is not None and step.factor[1] == "unused"}
    expected = Counter(
        f"_f{op.reads[0]}" if op.kind == "cholesky" else f"_s{op.slot}" for op in bound.ops if op.slot not in unused
    )
    assert named == expected


def _pairs(name: str) -> tuple[list, list]:
    """The pairwise layouts the source writer wrote, and those the binder made its NumPy
    kernels from, for one corpus case."""
    built: list = []  # the closure runner makes each term's kernel from its layout (.closures)
    make = closures_module.contraction_kernel
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(closures_module, "_layout_kernel", lambda layout: built.append(layout) or make(layout))
        _, writer = _binder_and_writer(name)
    return writer.pairs, [step.pair for layout in built for step in layout.steps if step.pair is not None]


@pytest.mark.parametrize("name", NAMES)
def test_source_and_kernels_lay_out_every_pair_alike(name):
    """Each pairwise contraction's orientation and layout is decided once
    (:func:`.kernels.oriented_pair`, kept in the term's record): the generated source
    writes exactly the pairs the binder's kernels were made from, oriented alike."""
    written, kernels = _pairs(name)
    assert set(written) == set(kernels)
    assert {pair for pair in written if pair.swapped} == {pair for pair in kernels if pair.swapped}


@pytest.mark.parametrize("name", ["matfac (diagonal Hessian)", "order 3 of sum(exp(Ax))"])
def test_the_corpus_has_pairs_taken_the_other_way_round(name):
    """The orientation test meets pairs the kernels take swapped (Bᵀ Aᵀ laid out as wanted)."""
    written, _ = _pairs(name)
    assert any(pair.swapped for pair in written)


@pytest.mark.parametrize(
    "name", ["log-sum-exp Hessian (one accumulate op)", "Rayleigh quotient (low-rank GEMM, copies)"]
)
def test_a_sum_into_one_buffer_is_written_from_the_binders_parts(name):
    """Which sums go into one buffer, and as which parts, is the binder's record
    (``BoundStep.parts``); the writer adds exactly those parts, deciding none."""
    build, shapes = CORPUS[name]
    roots = build()
    graphs = [axis_graph(roots[0] if len(roots) == 1 else tuple(roots))]
    bound = bind(build_plan(list(roots)), ShapeResolver(graphs, shapes, estimate=True), get_backend("numpy"))
    buffered = [op.slot for op in bound.ops if op.kind == "accumulate"]
    assert buffered and all(bound.steps[slot].parts for slot in buffered)
    assert all(step.parts is None for slot, step in bound.steps.items() if slot not in buffered)
    seen: list = []
    writer = ProgramSource(bound, ShapeResolver(graphs, shapes))
    accumulate = writer._accumulate
    writer._accumulate = lambda found, shape, take: seen.append(found) or accumulate(found, shape, take)  # type: ignore[method-assign]
    writer.write({slot: n for n, slot in bound.bound_plan.inputs.items()})
    assert [id(found) for found in seen] == [id(bound.steps[slot].parts) for slot in buffered]


def _band_terms(inline) -> list:
    """The core terms (:class:`.fused.BandTerm`) a banded op's description holds."""
    from tenscalc.compiler.fused import BandScaled, BandStretch, BandSum, BandTerm

    if isinstance(inline, BandTerm):
        return [inline]
    if isinstance(inline, BandSum):
        return [term for group in inline.groups for part in group for term in _band_terms(part)]
    if isinstance(inline, (BandScaled, BandStretch)):
        return _band_terms(inline.value)
    return []


def test_a_banded_steps_core_terms_are_written_from_the_records_their_op_holds():
    """A banded step's diagonal core term keeps the record it was bound with on its op
    (``BandTerm.record``): the writer reads it there, not program-wide by the dense
    shapes (the writer still writes the Hessian with the program's table emptied)."""
    build, shapes = CORPUS["chained Rosenbrock (slices, banded Hessian)"]
    roots = build()
    graphs = [axis_graph(roots[0] if len(roots) == 1 else tuple(roots))]
    planner = ShapeResolver(graphs, shapes, estimate=True)
    bound = bind(build_plan(list(roots)), planner, get_backend("numpy"))
    held = [term for op in bound.ops if op.kind == "band" for term in _band_terms(op.inline)]
    assert len(held) == 2  # the Hessian's two diagonal cores (-400 (x[1:] - x[:-1]^2), -400 x[:-1])
    made = {id(record) for record in planner.terms.values()}
    assert all(term.record is not None and id(term.record) in made for term in held)
    cores = {id(term.record) for term in held}
    bound.terms = {key: record for key, record in bound.terms.items() if id(record) not in cores}
    writer = ProgramSource(bound, ShapeResolver(graphs, shapes))
    writer.write({slot: n for n, slot in bound.bound_plan.inputs.items()})
    assert cores <= {id(record) for record in writer.records}
