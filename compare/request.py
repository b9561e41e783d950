"""One comparison asked for: :class:`CompareRequest`, every option of ``vcompare -l LEFT -r RIGHT``
in one frozen record, and the rules of which options go together, checked once here.

The command line builds one request from its typer options (:mod:`compare.cli.network`); the
library takes it (:func:`compare.api.compare_request`, :func:`compare.runs.folders.run_request`,
:func:`compare.runs.batch.run_batch_request`, :func:`compare.runs.single_op.operator_request`),
and the keyword conveniences (``compare_network(left, right, fusion_rule, **fields)`` ...) pass
their keywords straight to its constructor: adding an option is adding one field here (and its
typer option). :meth:`CompareRequest.validate` says which mode the request runs in and refuses a
combination of options that does not go together (:class:`~compare.errors.OptionError`, exit 2),
with the messages the command line has always printed; the API checks them too.

The output fields stay as given (``-o`` text, paths, flags): what each output becomes is the
output plan's business (:mod:`compare.cli.output`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from convert.remote import is_url

from .errors import OptionError
from .loaders import is_run_file
from .pairing.rule_records import FusionRule
from .records import Bound

if TYPE_CHECKING:  # pragma: no cover
    from convert.layouts import PluginSet

    from .pairing.msprobe_mapping import MsprobeMapping
    from .verdict.policy import Policy

PathLike = str | os.PathLike[str]

#: A rule option: a path to the JSON file, or a rule already loaded with ``load_fusion_rule``.
RuleArg = PathLike | FusionRule


class Mode(Enum):
    """What a request runs, chosen by :meth:`CompareRequest.mode`."""

    NETWORK = "network"  # the whole network, one row per tensor pair
    SINGLE_OP = "single-op"  # -d OP: one tensor element by element
    BATCH = "batch"  # -f DIR: every model of the dump tree with its rule file
    TWO_FILES = "two-files"  # -l FILE -r FILE: the two files' tensors compared as they are
    MAPPING_TABLE = "mapping-table"  # -map: the pairs listed, nothing compared


@dataclass(frozen=True)
class CompareRequest:
    """Every option of one comparison (``vcompare --help`` names each field's option); ``None`` /
    ``False`` = not given. Paths are not checked here (the command line checks that they are
    readable); :meth:`validate` checks which options go together.

    What is compared: ``left`` (``-l``: a dump folder, a file, or an fsspec URL as text) and
    ``right`` (``-r``); ``rank`` / ``iteration`` / ``graph`` (a number, a list, a range text such as
    ``"0|5-8"``, or ``"all"``: each in turn), ``model_name``, ``ge_graph`` (dump trees,
    :func:`compare.loaders.load_run`); ``dump_version`` (``-v``: 1 protobuf, 2 binary); ``ffts``
    (``-ffts``: FFTS+ slices kept apart); ``op_range`` / ``op_select`` (``--range`` / ``--select``,
    the texts as given: :mod:`compare.runs.op_range`).

    Rule files: ``fusion_rule`` (``-f``: a file, a loaded :class:`FusionRule`, or a folder of
    rules: batch mode), ``quant_rule`` (``-q``), ``close_fusion_rule`` (``-cf``), ``mapping``
    (``--mapping``: a names file or its entries), msprobe's mapping files ``layer_mapping`` (``-lm``),
    ``api_mapping`` (``-am [FILE]``: a file, or True for the built-in table), ``data_mapping``
    (``-dm``), ``cell_mapping`` (``-cm``) and ``fuzzy_match`` (``-fm``) -- msprobe trees only, not
    with rule options, read by :meth:`pairing_mapping` (docs/msprobe-mapping.md) --, ``custom_dir`` (``-custom``: a plugin root, or a
    :class:`convert.layouts.PluginSet` already loaded).

    Engine: ``algorithms`` (``-alg``: names / indices, or a comma-separated text; None: all ten),
    ``max_elements`` (``-max``), ``allow_same`` (``--allow-same``), ``cluster`` /
    ``scheduler`` (``--dask-cluster`` / ``--scheduler``, docs/distributed.md).

    Gate: ``gates`` (``--gate`` texts or :class:`Bound` records) and ``policy`` (``--policy``: a
    TOML file or a :class:`~compare.verdict.policy.Policy`).

    Outputs, as given: ``output`` (``-o``), ``csv`` (``-csv``), ``json_out`` / ``junit_out`` /
    ``html_out`` (``--json`` / ``--junit`` / ``--html``), ``verdicts``, ``layout`` (``vcompare`` or
    ``msaccucmp``), ``digits`` / ``float_format``, ``quiet``, ``verbose`` (every note of every part, not grouped), ``progress_bar``
    (``--progress/--no-progress``; None: on a terminal after 2 s).

    Modes: single-operator ``op`` (``-d``), ``tensor_type`` (``-t``), ``index`` (``-i``),
    ``topn`` (``-n``), ``max_lines`` (``--max-lines``), ``no_details`` (``--no-details``);
    ``mapping_table`` (``-map``); ``explain`` (``--explain OP``); ``consistency`` (``--consistency
    GROUPS``); ``overflow`` (``--overflow``).
    """

    # what is compared
    left: PathLike
    right: PathLike
    rank: object = None
    iteration: object = None
    graph: object = None
    model_name: str | None = None
    ge_graph: PathLike | None = None
    dump_version: int | None = None
    ffts: bool = False
    op_range: str | None = None
    op_select: str | None = None
    # rule files
    fusion_rule: RuleArg | None = None
    quant_rule: RuleArg | None = None
    close_fusion_rule: RuleArg | None = None
    mapping: PathLike | list | None = None
    # msprobe's mapping files (docs/msprobe-mapping.md); api_mapping True: the built-in table alone
    layer_mapping: PathLike | None = None
    api_mapping: PathLike | bool | None = None
    data_mapping: PathLike | None = None
    cell_mapping: PathLike | None = None
    fuzzy_match: bool = False
    custom_dir: PathLike | PluginSet | None = None
    # engine
    algorithms: Sequence[str | int] | str | None = None
    max_elements: int = 0
    allow_same: bool = False
    cluster: str | None = None
    scheduler: str | None = None
    # gate
    gates: Sequence[str | Bound] = ()
    policy: PathLike | Policy | None = None
    # outputs, as given
    output: str | None = None
    csv: bool = False
    json_out: PathLike | None = None
    junit_out: PathLike | None = None
    html_out: PathLike | None = None
    verdicts: bool = False
    layout: str = "vcompare"
    digits: int | None = None
    float_format: str | None = None
    quiet: bool = False
    verbose: bool = False
    progress_bar: bool | None = None
    # modes
    op: str | None = None
    tensor_type: str | None = None
    index: int | None = None
    topn: int | None = None
    max_lines: int | None = None
    no_details: bool = False
    mapping_table: bool = False
    explain: str | None = None
    consistency: str | None = None
    overflow: bool = False

    @property
    def select(self) -> dict[str, object]:
        """The dump-tree selection (``rank`` ... ``ge_graph``), as :func:`compare.loaders.load_run` takes it."""
        return {"rank": self.rank, "iteration": self.iteration, "graph": self.graph, "model_name": self.model_name,
                "ge_graph": self.ge_graph}

    @property
    def tensor_kind(self) -> str:
        """``-t`` as ``input`` / ``output`` (trimmed, lower case; ``output`` when not given)."""
        return (self.tensor_type or "output").strip().lower()

    def mode(self) -> Mode:
        """``-map`` selects the mapping table; two files (``-l`` and ``-r`` both local regular
        files) select two-file mode; else ``-d`` selects single-operator mode; otherwise ``-f``
        naming a folder selects batch mode. An fsspec URL is never a local file."""
        if self.mapping_table:
            return Mode.MAPPING_TABLE
        if _local_file(self.left) and _local_file(self.right):
            return Mode.TWO_FILES
        if self.op is not None:
            return Mode.SINGLE_OP
        if _rule_folder(self.fusion_rule):
            return Mode.BATCH
        return Mode.NETWORK

    def validate(self) -> Mode:
        """The request's mode, once every option is known to go with the others; raises
        :class:`OptionError` (exit 2) naming the options that do not. Reads only the file system's
        kind of ``-l`` / ``-r`` / ``-f`` (file or folder); cheap, and the same every call."""
        mode = self.mode()
        self._check_op_choice()
        if mode not in (Mode.TWO_FILES, Mode.MAPPING_TABLE):  # two files: -t / -i choose a dump tensor (no -d)
            self._check_single_op()
        network_only = [flag for flag, given in (
            ("--json", self.json_out is not None), ("--junit", self.junit_out is not None),
            ("--html", self.html_out is not None), ("--verdicts", self.verdicts),
            ("--explain", self.explain is not None), ("--dask-cluster", self.cluster is not None),
            ("--scheduler", self.scheduler is not None), ("--consistency", self.consistency is not None),
            ("--overflow", self.overflow)) if given]
        if mode in (Mode.SINGLE_OP, Mode.BATCH, Mode.MAPPING_TABLE) and network_only:
            raise OptionError(f"{', '.join(network_only)} describe a network comparison; single-operator mode (-d), "
                              "batch mode (-f DIR) and the mapping table (-map) do not write them")
        if mode is Mode.TWO_FILES and self.overflow:
            raise OptionError("--overflow describes the operators of a dump folder, not two files")
        self.check_msprobe_mapping(mode)
        match mode:
            case Mode.SINGLE_OP:
                if _rule_folder(self.fusion_rule):
                    raise OptionError("-d compares one operator of one model: -f must be a rule file, not a folder")
            case Mode.MAPPING_TABLE:
                self._check_mapping_table()
            case Mode.TWO_FILES:
                if self.op_range is not None or self.op_select is not None:
                    raise OptionError("--range / --select choose operators of dump folders, not of two files")
                self._check_two_files()
        return mode

    def msprobe_flags(self) -> list[str]:
        """The msprobe mapping options given (``-lm`` ``-am`` ``-dm`` ``-cm`` ``-fm``)."""
        return [flag for flag, given in (
            ("-lm", self.layer_mapping is not None), ("-am", self.api_mapping not in (None, False)),
            ("-dm", self.data_mapping is not None), ("-cm", self.cell_mapping is not None),
            ("-fm", self.fuzzy_match)) if given]

    def check_msprobe_mapping(self, mode: Mode) -> None:
        """msprobe's mapping options pair two msprobe trees: a network comparison or ``-d`` (not two
        files, batch mode or ``-map``), without fusion / quant rules."""
        flags = self.msprobe_flags()
        if not flags:
            return
        if mode in (Mode.TWO_FILES, Mode.BATCH, Mode.MAPPING_TABLE):
            raise OptionError(f"{', '.join(flags)} pair the calls of two msprobe dump trees: not with "
                              f"{'two files' if mode is Mode.TWO_FILES else 'batch mode (-f DIR)' if mode is Mode.BATCH else '-map'}")
        rules = [flag for flag, value in (("-f", self.fusion_rule), ("-q", self.quant_rule),
                                          ("-cf", self.close_fusion_rule)) if value is not None]
        if rules:
            raise OptionError(f"{', '.join(flags)} pair msprobe calls by their names; {', '.join(rules)} pair Ascend "
                              "operators through a fusion rule: give one or the other")

    def pairing_mapping(self) -> "PathLike | list | MsprobeMapping | None":
        """What pairing is given as ``mapping``: the ``--mapping`` file or entries as they are, or --
        with an msprobe mapping option -- :class:`~compare.pairing.msprobe_mapping.MsprobeMapping`
        with every YAML file read (and the ``--mapping`` entries first). Raises :class:`OptionError`
        naming the file for an unreadable or malformed one."""
        if not self.msprobe_flags():
            return self.mapping
        # here: only with an msprobe mapping option (the msprobe pairing modules and their readers)
        from .pairing.mapping_file import load_mapping
        from .pairing.msprobe_mapping import MsprobeMapping  # (same reason)

        names = load_mapping(self.mapping) if self.mapping is not None and not isinstance(self.mapping, list) \
            else self.mapping
        return MsprobeMapping.read(layer_mapping=self.layer_mapping, api_mapping=self.api_mapping,
                                   data_mapping=self.data_mapping, cell_mapping=self.cell_mapping,
                                   fuzzy_match=self.fuzzy_match, names=names if isinstance(names, list) else None)

    def _check_op_choice(self) -> None:
        """``--range`` / ``--select``: one of them, a network comparison, one rule file."""
        if self.op_range is not None and self.op_select is not None:
            raise OptionError("--range and --select choose operators in two ways: give one of them")
        if self.op_range is None and self.op_select is None:
            return
        flag = "--range" if self.op_range is not None else "--select"
        if self.op is not None:
            raise OptionError(f"{flag} chooses operators of a network comparison: not with -d (one operator)")
        if self.fusion_rule is None or _rule_folder(self.fusion_rule):
            raise OptionError(f"{flag} chooses operators by their id in the fusion rule: give one rule file with -f")

    def _check_single_op(self) -> None:
        """The single-operator options: only with ``-d``; ``-d`` names an operator; ``-t`` input or output."""
        if self.op is None:
            given = [flag for flag, value in (("-t", self.tensor_type), ("-i", self.index), ("-n", self.topn),
                                              ("--max-lines", self.max_lines)) if value is not None]
            if self.no_details:
                given.append("--no-details")
            if given:
                verb = "applies" if len(given) == 1 else "apply"
                raise OptionError(f"{', '.join(given)} only {verb} to single-operator mode: add -d OP_NAME")
            return
        if not self.op.strip():
            raise OptionError("-d needs an operator name")
        self._check_tensor_type()

    def _check_tensor_type(self) -> None:
        if self.tensor_kind not in ("input", "output"):
            raise OptionError(f"-t must be input or output, not {self.tensor_type!r}")

    def _check_mapping_table(self) -> None:
        """``-map``: the pairs of a whole network through one rule file; no single-operator options."""
        refused = [flag for flag, given in (("-d", self.op is not None), ("-t", self.tensor_type is not None),
                                            ("-i", self.index is not None), ("-n", self.topn is not None),
                                            ("--max-lines", self.max_lines is not None),
                                            ("--no-details", self.no_details), ("--mapping", self.mapping is not None),
                                            ("-cf", self.close_fusion_rule is not None)) if given]
        if refused:
            raise OptionError(f"-map lists the pairs of a whole network through -f / -q: not with {', '.join(refused)}")
        if _rule_folder(self.fusion_rule):
            raise OptionError("-map lists the pairs of one model: -f must be a rule file, not a folder")

    def _check_two_files(self) -> None:
        """The options that describe folders, rules or operators: refused with two files."""
        given = [flag for flag, value in (
            ("-f", self.fusion_rule), ("-q", self.quant_rule), ("-cf", self.close_fusion_rule),
            ("--mapping", self.mapping), ("-d", self.op), ("-n", self.topn), ("--max-lines", self.max_lines),
            ("--no-details", self.no_details or None), ("--rank", self.rank), ("--iteration", self.iteration),
            ("--graph", self.graph), ("--model-name", self.model_name), ("--ge-graph", self.ge_graph),
            ("--verdicts", self.verdicts or None), ("--explain", self.explain), ("--html", self.html_out),
            ("--dask-cluster", self.cluster), ("--scheduler", self.scheduler), ("--consistency", self.consistency),
            ("-custom", self.custom_dir)) if value is not None]
        if given:
            raise OptionError(f"{', '.join(given)}: -l and -r are two files, compared tensor by tensor as they are; "
                              "these options apply to dump folders (-t input|output and -i N choose a dump file's "
                              "tensor)")
        if self.tensor_type is not None:
            self._check_tensor_type()


def _local_file(path: PathLike) -> bool:
    """A local regular file that is not a whole run by itself (an fsspec URL never is; msprobe's
    ``dump.json`` is a run: :func:`compare.loaders.is_run_file`)."""
    return not is_url(path) and Path(path).is_file() and not is_run_file(path)


def _rule_folder(rule: RuleArg | None) -> bool:
    """``-f`` names a folder (of rule files: batch mode)."""
    return isinstance(rule, (str, os.PathLike)) and Path(rule).is_dir()
