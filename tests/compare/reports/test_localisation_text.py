"""The localisation block written as text from the columns (``--json``:
:func:`compare.reports.divergence.localisation_text`) is the text the compact encoder writes of
its dict (:func:`localisation_document`), whatever the texts (non-ASCII, control characters,
quotes, lone surrogates of undecodable file names) and numbers (NaN, infinities, -0.0, the
exponent forms, subnormals, whole numbers, booleans) of the verdicts."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from compare.diverge.records import (
    GraphSource,
    InputEdge,
    Localisation,
    NodeRole,
    OpGraph,
    OpNode,
    OpVerdict,
    SourceLine,
    TensorCheck,
    Verdict,
    verdict_table,
)
from compare.reports.divergence import (
    localisation_document,
    localisation_text,
    verdict_document,
    verdict_texts,
)
from compare.reports.result_json import ROW_ENCODER, EncodedJson, dumps, head_and_tail

TEXTS = st.text(max_size=6) | st.sampled_from(["a\"b", "c\\d", "\n\t\x00", "é中", "\udcff", "1e-7,", ""])
FLOATS = (st.none() | st.floats() | st.sampled_from([0.0, -0.0, 1e-5, 9.99e-5, 1e-4, 1e-7, 1e16, 5e-324, math.nan,
                                                      math.inf, -math.inf]) | st.integers(-3, 3))
COUNTS = st.none() | st.integers(0, 2**70) | st.booleans()


@st.composite
def checks(draw: st.DrawFn) -> TensorCheck:
    edge = draw(st.none() | st.builds(InputEdge, index=st.integers(0, 3), producer=st.none() | TEXTS,
                                      output=st.integers(0, 3), role=st.sampled_from(list(NodeRole)), name=TEXTS))
    return TensorCheck(tensor_id=draw(TEXTS), passed=draw(st.sampled_from([None, True, False])), error=draw(FLOATS),
                       failed=tuple(draw(st.lists(st.tuples(TEXTS, FLOATS.filter(lambda v: v is not None)),
                                                  max_size=2))),
                       nan=draw(COUNTS), inf=draw(COUNTS), saturated=draw(COUNTS), producer=edge)


@st.composite
def verdicts(draw: st.DrawFn) -> OpVerdict:
    return OpVerdict(op=draw(TEXTS), op_type=draw(st.none() | TEXTS), position=draw(st.integers(0, 10**20)),
                     verdict=draw(st.sampled_from(list(Verdict))), outputs=tuple(draw(st.lists(checks(), max_size=3))),
                     inputs=tuple(draw(st.lists(checks(), max_size=3))), error=draw(FLOATS),
                     input_error=draw(FLOATS), amplification=draw(FLOATS), blame=tuple(draw(st.lists(TEXTS, max_size=2))),
                     source=draw(st.none() | st.builds(SourceLine, file=TEXTS, line=st.integers(0, 9), code=TEXTS)),
                     rank=draw(st.none() | st.integers(0, 3)), iteration=draw(st.none() | st.integers(0, 3)))


@settings(max_examples=300, deadline=None)
@given(st.lists(verdicts(), max_size=40))
def test_verdict_texts_are_the_encoded_documents(records: list[OpVerdict]) -> None:
    assert verdict_texts(verdict_table(records)) == [ROW_ENCODER.encode(verdict_document(v)) for v in records]


@settings(max_examples=100, deadline=None)
@given(st.lists(verdicts(), max_size=8), st.lists(TEXTS, max_size=3), TEXTS, st.none() | TEXTS, st.booleans())
def test_the_block_text_is_the_encoded_block(records: list[OpVerdict], notes: list[str], bounds: str,
                                             nonfinite: str | None, edges: bool) -> None:
    graph = OpGraph(nodes={"a": OpNode("a")}, source=GraphSource.FUSION_RULE, edges=edges)
    first = records[0] if records else None
    localisation = Localisation(verdicts=records, graph=graph, first_divergence=first, first_nonfinite=nonfinite,
                                bounds=bounds, notes=tuple(notes))
    assert localisation_text(localisation) == ROW_ENCODER.encode(localisation_document(localisation))


def test_a_head_writes_the_text_as_it_writes_the_block() -> None:
    """:func:`head_and_tail` takes an :class:`EncodedJson` as the value it writes: compact for a
    block beyond the indent limit, indented (read back, then written) below it."""
    check = TensorCheck(tensor_id="a:output:0", passed=False, error=1e-7, failed=(("MaxRelDiff", 2.5e-05),), nan=0,
                        producer=InputEdge(0, "w", role=NodeRole.PARAMETER, name="fc.weight"))
    graph = OpGraph(nodes={"a": OpNode("a")}, source=GraphSource.MSPROBE_CALLS, edges=False)
    for count in (3, 3000):  # below and beyond the indent limit
        records = [OpVerdict(op=f"op{i}", op_type="Conv2D", position=i, verdict=Verdict.ORIGIN, outputs=(check,),
                             inputs=(check,), error=math.nan, input_error=0.0, amplification=math.inf)
                   for i in range(count)]
        localisation = Localisation(verdicts=records, graph=graph, first_divergence=records[0], bounds="b")
        block = localisation_document(localisation)
        encoded = EncodedJson(localisation_text(localisation))
        assert head_and_tail({"localisation": encoded, "rows": []}) == head_and_tail({"localisation": block, "rows": []})
        assert encoded.value() == block
        assert dumps({"localisation": encoded}) == dumps({"localisation": block})
