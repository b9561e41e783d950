"""CompareRequest: every option of one comparison in one record. Its mode, every option rule it
checks (the command line's messages, word for word), the API refusing what the command line
refuses, the command line building exactly the request its options say, and ``compare.pair_runs``
pairing as the command line pairs."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

import compare
from compare import CompareRequest, compare_network, compare_request, load_run
from compare.cli import app
from compare.errors import OptionError
from compare.pairing.entry import pair
from compare.request import Mode
from compare.runs.batch import run_batch_request
from compare.runs.folders import op_choice, run_network, run_request
from compare.runs.op_range import OpRange, OpSelect
from compare.runs.single_op import compare_operator, operator_request

DEMO = FIXTURES / "demo"
RULE = DEMO / "model.json"
runner = CliRunner()


def _demo(**fields: object) -> CompareRequest:
    return CompareRequest(left=DEMO / "npu", right=DEMO / "golden", **fields)  # type: ignore[arg-type]


@pytest.fixture
def npys(tmp_path: Path) -> tuple[Path, Path]:
    np.save(tmp_path / "my.npy", np.ones((2, 3), np.float32))
    np.save(tmp_path / "golden.npy", np.ones((2, 3), np.float32))
    return tmp_path / "my.npy", tmp_path / "golden.npy"


# ---------------------------------------------------------------------------------------------- the mode


def test_mode(npys: tuple[Path, Path]) -> None:
    assert _demo(fusion_rule=RULE).mode() is Mode.NETWORK
    assert _demo(fusion_rule=RULE, op="conv1").mode() is Mode.SINGLE_OP
    assert _demo(fusion_rule=DEMO).mode() is Mode.BATCH
    assert _demo(fusion_rule=RULE, mapping_table=True).mode() is Mode.MAPPING_TABLE
    assert CompareRequest(left=npys[0], right=npys[1]).mode() is Mode.TWO_FILES
    assert CompareRequest(left=str(npys[0]), right=str(npys[1]), op="x").mode() is Mode.TWO_FILES  # text paths too
    assert CompareRequest(left="s3://bucket/a.npy", right=npys[1]).mode() is Mode.NETWORK  # a URL is no local file
    assert CompareRequest(left=npys[0], right=npys[1], mapping_table=True).mode() is Mode.MAPPING_TABLE


def test_a_request_is_frozen_and_validate_gives_its_mode() -> None:
    request = _demo(fusion_rule=RULE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.op = "conv1"  # type: ignore[misc]
    assert request.validate() is Mode.NETWORK
    assert request.select == {"rank": None, "iteration": None, "graph": None, "model_name": None, "ge_graph": None}
    assert _demo(tensor_type=" Input ").tensor_kind == "input"
    assert _demo().tensor_kind == "output"


# ---------------------------------------------------------------------------------------------- the rules

#: (fields, message): each rule the command line had in compare/cli/modes.py and cli/two_files.py.
REFUSED = [
    # --range / --select
    (dict(fusion_rule=RULE, op_range="1,-1,1", op_select="3"),
     "--range and --select choose operators in two ways: give one of them"),
    (dict(fusion_rule=RULE, op_range="1,-1,1", op="conv1"),
     "--range chooses operators of a network comparison: not with -d (one operator)"),
    (dict(op_select="3"), "--select chooses operators by their id in the fusion rule: give one rule file with -f"),
    (dict(fusion_rule=DEMO, op_range="1,2,1"),
     "--range chooses operators by their id in the fusion rule: give one rule file with -f"),
    # single-operator options
    (dict(tensor_type="input"), "-t only applies to single-operator mode: add -d OP_NAME"),
    (dict(index=1, topn=5, no_details=True), "-i, -n, --no-details only apply to single-operator mode: add -d OP_NAME"),
    (dict(max_lines=20000), "--max-lines only applies to single-operator mode: add -d OP_NAME"),
    (dict(op="  "), "-d needs an operator name"),
    (dict(op="conv1", tensor_type="both"), "-t must be input or output, not 'both'"),
    # what only a network comparison writes
    (dict(op="conv1", json_out="r.json", verdicts=True),
     "--json, --verdicts describe a network comparison; single-operator mode (-d), batch mode (-f DIR) and the "
     "mapping table (-map) do not write them"),
    (dict(fusion_rule=DEMO, cluster="local:2", overflow=True),
     "--dask-cluster, --overflow describe a network comparison"),
    (dict(fusion_rule=RULE, mapping_table=True, html_out="r.html", explain="x", scheduler="tcp://h:1",
          consistency="dp:2", junit_out="j.xml"),
     "--junit, --html, --explain, --scheduler, --consistency describe a network comparison"),
    # single-operator mode
    (dict(fusion_rule=DEMO, op="conv1"), "-d compares one operator of one model: -f must be a rule file, not a folder"),
    # the mapping table
    (dict(fusion_rule=RULE, mapping_table=True, op="conv1"),
     "-map lists the pairs of a whole network through -f / -q: not with -d"),
    (dict(fusion_rule=RULE, mapping_table=True, tensor_type="input", index=0, topn=3, max_lines=10000,
          no_details=True, mapping="m.csv", close_fusion_rule=RULE),
     "-map lists the pairs of a whole network through -f / -q: not with -t, -i, -n, --max-lines, --no-details, "
     "--mapping, -cf"),
    (dict(fusion_rule=DEMO, mapping_table=True),
     "-map lists the pairs of one model: -f must be a rule file, not a folder"),
]


@pytest.mark.parametrize(("fields", "message"), REFUSED)
def test_refused_combinations(fields: dict, message: str) -> None:
    with pytest.raises(OptionError) as refused:
        _demo(**fields).validate()
    assert str(refused.value).startswith(message)


TWO_FILES_REFUSED = [
    (dict(overflow=True), "--overflow describes the operators of a dump folder, not two files"),
    (dict(fusion_rule=RULE, op_select="4"), "--range / --select choose operators of dump folders, not of two files"),
    (dict(fusion_rule=RULE, op="x", rank="0", html_out="r.html", custom_dir="plugins"),
     "-f, -d, --rank, --html, -custom: -l and -r are two files, compared tensor by tensor as they are; these options "
     "apply to dump folders (-t input|output and -i N choose a dump file's tensor)"),
    (dict(quant_rule="q.json", close_fusion_rule="c.json", mapping="m.csv", topn=3, max_lines=10000, no_details=True,
          iteration="1", graph="0", model_name="m", ge_graph="g.txt", verdicts=True, explain="op",
          cluster="local:2", scheduler="tcp://h:1", consistency="dp:2"),
     "-q, -cf, --mapping, -n, --max-lines, --no-details, --iteration, --graph, --model-name, --ge-graph, --verdicts, "
     "--explain, --dask-cluster, --scheduler, --consistency: -l and -r are two files"),
    (dict(tensor_type="inputs"), "-t must be input or output, not 'inputs'"),
]


@pytest.mark.parametrize(("fields", "message"), TWO_FILES_REFUSED)
def test_two_files_refusals(npys: tuple[Path, Path], fields: dict, message: str) -> None:
    with pytest.raises(OptionError) as refused:
        CompareRequest(left=npys[0], right=npys[1], **fields).validate()  # type: ignore[arg-type]
    assert str(refused.value).startswith(message)


def test_two_files_take_t_and_i_without_d(npys: tuple[Path, Path]) -> None:
    request = CompareRequest(left=npys[0], right=npys[1], tensor_type="input", index=2, json_out="r.json")
    assert request.validate() is Mode.TWO_FILES


@pytest.mark.parametrize(("fields", "message"), REFUSED[:6])
def test_the_command_line_says_the_same(fields: dict, message: str) -> None:
    """The CLI's refusal is the request's: the same text on stderr, exit 2."""
    flags = {"fusion_rule": "-f", "op_range": "--range", "op_select": "--select", "op": "-d", "tensor_type": "-t",
             "index": "-i", "topn": "-n", "no_details": "--no-details", "max_lines": "--max-lines"}
    args = ["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden")]
    for name, value in fields.items():
        args += [flags[name]] if value is True else [flags[name], str(value)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert f"error: {message}" in result.output


# ---------------------------------------------------------------------------------------------- the API


@pytest.mark.parametrize(("fields", "message"), [
    (dict(tensor_type="input"), "-t only applies to single-operator mode: add -d OP_NAME"),
    (dict(fusion_rule=RULE, op_range="1,-1,1", op_select="3"),
     "--range and --select choose operators in two ways: give one of them"),
    (dict(op_select="3"), "--select chooses operators by their id in the fusion rule: give one rule file with -f"),
])
def test_the_api_checks_the_rules_too(fields: dict, message: str) -> None:
    with pytest.raises(OptionError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        compare_network(DEMO / "npu", DEMO / "golden", **fields)
    with pytest.raises(OptionError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        compare_request(_demo(**fields))


def test_the_api_refuses_another_mode() -> None:
    with pytest.raises(OptionError, match="this request is single-op mode"):
        compare_request(_demo(fusion_rule=RULE, op="conv1"))
    with pytest.raises(OptionError, match="this request is batch mode"):
        compare_network(DEMO / "npu", DEMO / "golden", DEMO)


def test_compare_request_and_the_keywords_give_one_result() -> None:
    request = _demo(fusion_rule=RULE, algorithms="0,1", gates=("CosineSimilarity>=0.5",), op_select="4,5")
    by_request = compare_request(request)
    by_keywords = compare_network(DEMO / "npu", DEMO / "golden", RULE, algorithms="0,1",
                                  gates=["CosineSimilarity>=0.5"], op_select="4,5")
    assert by_request.metrics == by_keywords.metrics == ["CosineSimilarity", "MaxAbsoluteError"]
    assert [r.tensor_id for r in by_request.rows] == [r.tensor_id for r in by_keywords.rows]
    assert by_request.gated and by_request.options["ops"] == "--select 4,5"
    assert any(note.startswith("--select 4,5: ") for note in by_request.notes)
    assert by_request.options["gates"] == ["CosineSimilarity>=0.5"]


def test_unknown_keywords_are_refused_by_the_request() -> None:
    with pytest.raises(TypeError, match="no_such_option"):
        compare_network(DEMO / "npu", DEMO / "golden", no_such_option=1)
    with pytest.raises(TypeError, match="no_such_option"):
        run_network(DEMO / "npu", DEMO / "golden", no_such_option=1)


def test_op_choice_parses_the_text() -> None:
    assert op_choice(_demo()) is None
    assert op_choice(_demo(op_range="2,,3")) == OpRange(2, -1, 3)
    assert op_choice(_demo(op_select="7,3,7")) == OpSelect((7, 3))
    with pytest.raises(OptionError, match="--range '1,2': give start,end,step"):
        op_choice(_demo(op_range="1,2"))


def test_run_request_and_run_network_agree() -> None:
    request = _demo(fusion_rule=RULE, algorithms=["CosineSimilarity"])
    by_request = run_request(request, extra_metrics=["MaxAbsoluteError"])
    by_keywords = run_network(DEMO / "npu", DEMO / "golden", RULE, algorithms=["CosineSimilarity"],
                              extra_metrics=["MaxAbsoluteError"])
    assert by_request.metrics == by_keywords.metrics == ["CosineSimilarity", "MaxAbsoluteError"]
    assert [r.metrics for r in by_request.rows] == [r.metrics for r in by_keywords.rows]


def test_operator_request_and_compare_operator_agree() -> None:
    request = _demo(fusion_rule=RULE, op="conv1", tensor_type=" Output", algorithms="0")
    by_request = operator_request(request, extra_metrics=["MaxAbsoluteError"])
    by_keywords = compare_operator(DEMO / "npu", DEMO / "golden", "conv1", fusion_rule=RULE, algorithms="0",
                                   extra_metrics=["MaxAbsoluteError"])
    assert by_request.tensor_id == by_keywords.tensor_id == "conv1:output:0"
    assert list(by_request.metrics) == ["CosineSimilarity", "MaxAbsoluteError"]
    assert by_request.metrics == by_keywords.metrics


def test_batch_request_compares_each_model(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "model.json").write_bytes(RULE.read_bytes())
    time_folder = next((DEMO / "npu").iterdir())
    batch = run_batch_request(CompareRequest(left=time_folder, right=DEMO / "golden", fusion_rule=rules,
                                             algorithms="0"), extra_metrics=["MaxAbsoluteError"])
    assert [item.model_name for item in batch] == ["demo_net"]
    assert batch[0].result.metrics == ["CosineSimilarity", "MaxAbsoluteError"]


# ---------------------------------------------------------------------------------------------- the CLI


def _captured(monkeypatch: pytest.MonkeyPatch, *args: str) -> CompareRequest:
    """The request the main command builds from ``args`` (the runner replaced)."""
    seen: list[CompareRequest] = []

    def fake(request: CompareRequest) -> int:
        seen.append(request)
        return 0

    monkeypatch.setattr("compare.cli.modes.run_compare", fake)
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    (request,) = seen
    return request


def test_the_cli_builds_the_request_its_options_say(monkeypatch: pytest.MonkeyPatch) -> None:
    request = _captured(
        monkeypatch, "-l", "npu", "-r", "s3://bucket/golden", "-f", "model.json", "-q", "quant.json",
        "-cf", "close.json", "-o", "out/r.csv", "-csv", "-alg", "0,1", "-custom", "plugins", "-v", "2",
        "--layout", "msaccucmp", "--gate", "CosineSimilarity>=0.99", "--gate", "MaxAbsoluteError<=1",
        "--policy", "p.toml", "--json", "r.json", "--junit", "r.xml", "--digits", "4", "--float-format", "fixed",
        "--allow-same", "--no-progress", "-max", "100", "--quiet", "--rank", "0", "--iteration", "all",
        "--graph", "1", "--model-name", "m", "--ge-graph", "g.txt", "--verdicts", "--explain", "prob",
        "--html", "r.html", "--scheduler", "tcp://h:8786", "--consistency", "dp:2", "--overflow",
        "--mapping", "map.csv", "-ffts", "--range", "1,-1,10")
    assert request == CompareRequest(
        left=Path("npu"), right="s3://bucket/golden", rank="0", iteration="all", graph="1", model_name="m",
        ge_graph=Path("g.txt"), dump_version=2, ffts=True, op_range="1,-1,10", op_select=None,
        fusion_rule=Path("model.json"), quant_rule=Path("quant.json"), close_fusion_rule=Path("close.json"),
        mapping=Path("map.csv"), custom_dir=Path("plugins"), algorithms="0,1", max_elements=100, allow_same=True,
        cluster=None, scheduler="tcp://h:8786", gates=("CosineSimilarity>=0.99", "MaxAbsoluteError<=1"),
        policy=Path("p.toml"), output="out/r.csv", csv=True, json_out=Path("r.json"), junit_out=Path("r.xml"),
        html_out=Path("r.html"), verdicts=True, layout="msaccucmp", digits=4, float_format="fixed", quiet=True,
        progress_bar=False, explain="prob", consistency="dp:2", overflow=True)


def test_the_cli_builds_a_single_op_request(monkeypatch: pytest.MonkeyPatch) -> None:
    request = _captured(monkeypatch, "-m", "npu", "-g", "golden", "-d", "conv1", "-t", "input", "-i", "1",
                        "-n", "5", "--max-lines", "20000", "--no-details", "--dask-cluster", "local:2",
                        "--select", "3", "-map", "--progress")
    assert request == CompareRequest(left=Path("npu"), right=Path("golden"), op="conv1", tensor_type="input",
                                     index=1, topn=5, max_lines=20000, no_details=True, cluster="local:2",
                                     op_select="3", mapping_table=True, progress_bar=True, algorithms="all")


def test_the_cli_defaults_are_the_request_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _captured(monkeypatch, "-l", "a", "-r", "b") == CompareRequest(left=Path("a"), right=Path("b"),
                                                                           algorithms="all")


# ---------------------------------------------------------------------------------------------- compare.pair_runs


def test_public_pair_runs_is_the_command_lines_pairing() -> None:
    left = load_run(FIXTURES / "mindspore" / "sync", iteration=0)
    right = load_run(FIXTURES / "mindspore" / "async", iteration=0)
    pairing = compare.pair_runs(left, right)
    assert pairing.mode == pair(left, right).pairing.mode == "by-name (scope)"  # MindSpore: by scope name
    assert [(p.left_op, p.right_op) for p in pairing.pairs] == [(p.left_op, p.right_op)
                                                                 for p in pair(left, right).pairing.pairs]
    demo = compare.pair_runs(load_run(DEMO / "npu"), load_run(DEMO / "golden"), fusion_rule=RULE)
    assert demo.mode == "fusion"


def test_public_pair_runs_takes_a_mapping(tmp_path: Path) -> None:
    left = load_run(FIXTURES / "mindspore" / "sync", iteration=0)
    right = load_run(FIXTURES / "mindspore" / "async", iteration=0)
    first = compare.pair_runs(left, right).pairs[0]
    mapping = tmp_path / "map.csv"
    mapping.write_text(f"{first.left_op},{first.right_op}\n")
    mapped = compare.pair_runs(left, right, mapping=os.fspath(mapping))
    assert any("mapping file" in note for note in mapped.notes)
    with pytest.raises(OptionError, match="--mapping pairs operators by the names it lists"):
        compare.pair_runs(left, right, mapping=mapping, fusion_rule=RULE)


def test_two_msprobe_dump_json_files_are_two_runs_not_two_files(tmp_path: Path) -> None:
    """``-l A/dump.json -r B/dump.json``: msprobe's ``dump.json`` stands for its run
    (:func:`compare.loaders.is_run_file`), so the request is a network comparison, not two-file mode."""
    from compare.testing.synthetic_msprobe import write_msprobe_dump

    write_msprobe_dump(tmp_path / "npu")
    write_msprobe_dump(tmp_path / "bench", noise=1e-3, seed=7)
    left, right = tmp_path / "npu" / "step0" / "rank0" / "dump.json", tmp_path / "bench" / "step0" / "rank0" / "dump.json"
    assert left.is_file() and right.is_file()
    request = CompareRequest(left, right)
    assert request.validate() is Mode.NETWORK
    result = compare_request(request)
    assert result.rows and result.network is not None
