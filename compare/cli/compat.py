"""``vcompare compare ...``: msaccucmp's and msprobe's command lines, translated into the main command's.

Two tools' users type ``compare``; this subcommand takes their spellings as they are
(docs/migration.md, option by option) and runs the main command ``vcompare -l LEFT -r RIGHT ...``
once with the translated options -- the comparison has one implementation, the main command's.

- msaccucmp: ``compare -m MY -g GOLDEN [-f FUSION] [-q QUANT] [-cf CLOSE] [-out FOLDER]
  [-op OP (-i K | -o K)] ...``; the result is ``FOLDER/result_{YYYYmmddHHMMSS}.csv`` as there
  (no ``-out``: the current folder).
- msprobe: ``compare -tp TARGET -gp GOLDEN [-o FOLDER] [-s] [-fm] [-lm FILE] [-am [FILE]]
  [-dm FILE] [-cm FILE] [--xlsx] ...`` or ``compare -i compare.json [-o FOLDER] ...`` (the JSON's
  ``npu_path``, ``bench_path``, ``stack_path``, ``is_print_compare_log``); the result is
  ``FOLDER/compare_result_{YYYYmmddHHMMSS}.csv`` (``.xlsx`` with ``--xlsx``; FOLDER defaults to
  ``./output``), as msprobe names it.

Which spelling (:func:`detect`): the options naming the two dumps decide. ``-m`` (but ``-m MODE``,
msprobe's ``--mode``), ``--my_dump_path``, ``-g``, ``--golden_dump_path`` or ``-out`` make it
msaccucmp's; ``-tp``, ``--target_path``, ``-gp``, ``--golden_path``, ``--input_path``, ``-m MODE``
or ``-i`` with a value that is not a number make it msprobe's. Both in one line is refused with
the two forms; an option of the other tool, or of no tool, is refused with a suggestion. The
options the two tools share by name mean what they mean in the line's tool: ``-o K`` (a number)
is msaccucmp's output-tensor index (with ``-op``), any other ``-o`` its result path as in
``compare_vector``; ``-i K`` is msaccucmp's input-tensor index, or the index of the tensor ``-t``
names (``compare_vector``'s ``-d OP -t output -i K``); ``-s`` is msaccucmp's ``--select`` and
msprobe's ``--stack_mode``; ``-f`` is msaccucmp's fusion rule and old msprobe's fuzzy match.

Tokens after ``--`` are vcompare's own options (``--gate``, ``--json`` ...), appended as they are.
Options of either tool that vcompare has no counterpart for are refused with the reason and, where
there is one, the vcompare option to use instead: never taken and then ignored.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from enum import Enum
from pathlib import Path

import typer
from typer.core import TyperCommand

from convert.errors import OptionError
from convert.exits import EXIT_CANNOT_RUN, EXIT_OK

from .echo import err


class Spelling(Enum):
    """Whose command line: the two tools :func:`translate` takes."""

    MSACCUCMP = "msaccucmp"
    MSPROBE = "msprobe"


class Arity(Enum):
    """How many values an option takes: none (a switch), one, or one that may be left out
    (msprobe's ``-am [FILE]``: the value is taken when the next token is not an option)."""

    FLAG = "flag"
    VALUE = "value"
    OPTIONAL = "optional value"


@dataclass(frozen=True)
class Opt:
    """One option of a tool: its field in the tool's line record, its spellings, its arity and,
    for an option vcompare does not take, why (and what to use instead); empty: taken."""

    field: str
    names: tuple[str, ...]
    arity: Arity
    refused: str = ""


@dataclass(frozen=True)
class MsaccucmpLine:
    """An msaccucmp ``compare`` line (and old ``compare_vector``'s ``-d`` / ``-t`` / ``-o PATH``)."""

    left: str | None = None
    right: str | None = None
    output: str | None = None
    fusion: str | None = None
    quant: str | None = None
    close: str | None = None
    custom: str | None = None
    algorithm: str | None = None
    mapping_table: bool = False
    overflow: bool = False
    op_range: str | None = None
    select: str | None = None
    max_cmp_size: str | None = None
    dump_version: str | None = None
    op: str | None = None
    tensor_type: str | None = None
    output_tensor: str | None = None
    input_tensor: str | None = None
    topn: str | None = None
    max_line: str | None = None
    no_details: bool = False
    ffts: bool = False
    csv: bool = False


@dataclass(frozen=True)
class MsprobeLine:
    """An ``msprobe compare`` line; an ``OPTIONAL`` field is ``""`` when given without its value."""

    input_path: str | None = None
    target: str | None = None
    golden: str | None = None
    output: str | None = None
    xlsx: bool = False
    stack_mode: bool = False
    compare_only: bool = False
    fuzzy_match: bool = False
    highlight: bool = False
    cell_mapping: str | None = None
    api_mapping: str | None = None
    data_mapping: str | None = None
    layer_mapping: str | None = None
    tensor_log: bool = False
    rank: str | None = None
    step: str | None = None
    mode: str | None = None
    fusion: str | None = None
    quant: str | None = None
    close: str | None = None


@dataclass(frozen=True)
class Translation:
    """What :func:`translate` made of a line: whose spelling it was, the main command's argv
    (``-l LEFT -r RIGHT ...``, then the tokens after ``--``) and the notes to say on stderr."""

    spelling: Spelling
    argv: tuple[str, ...]
    notes: tuple[str, ...]


_F, _V, _O = Arity.FLAG, Arity.VALUE, Arity.OPTIONAL

#: msaccucmp's ``compare`` options (spec §1.1), and old ``compare_vector``'s ``-d`` / ``-t``.
MSACCUCMP_OPTIONS: tuple[Opt, ...] = (
    Opt("left", ("-m", "--my_dump_path"), _V), Opt("right", ("-g", "--golden_dump_path"), _V),
    Opt("output", ("-out", "--output"), _V), Opt("fusion", ("-f", "--fusion_rule_file"), _V),
    Opt("quant", ("-q", "--quant_fusion_rule_file"), _V), Opt("close", ("-cf", "--close_fusion_rule_file"), _V),
    Opt("custom", ("-c", "--custom_script_path", "-custom"), _V), Opt("algorithm", ("-alg", "--algorithm"), _V),
    Opt("mapping_table", ("-map", "--mapping"), _F), Opt("overflow", ("-overflow_detection",), _F),
    Opt("op_range", ("-r", "--range"), _V), Opt("select", ("-s", "--select"), _V),
    Opt("max_cmp_size", ("-max", "--max_cmp_size"), _V), Opt("dump_version", ("-v", "--version"), _V),
    Opt("op", ("-op", "--op_name", "-d"), _V), Opt("tensor_type", ("-t",), _V),
    Opt("output_tensor", ("-o", "--output_tensor"), _V), Opt("input_tensor", ("-i", "--input_tensor"), _V),
    Opt("topn", ("-n", "--topn"), _V), Opt("max_line", ("-ml", "--max_line"), _V),
    Opt("no_details", ("--ignore_single_op_result",), _F), Opt("ffts", ("-ffts",), _F), Opt("csv", ("-csv",), _F),
    Opt("", ("-a", "--algorithm_options"), _V, "vcompare's metrics take no parameters; choose them with -alg"),
    Opt("", ("-advisor",), _F, "vcompare has no advisor file; --verdicts marks where the error starts and "
                               "--explain OP prints its chain (after --: vcompare compare ... -- --verdicts)"),
    Opt("", ("-p", "--post_process"), _V, "PyTorch .h5 comparison is not supported; dump with msprobe and compare "
                                          "the dump trees"),
)

#: ``msprobe compare``'s options (the current ``-tp`` / ``-gp`` form and the older ``-i compare.json``).
MSPROBE_OPTIONS: tuple[Opt, ...] = (
    Opt("input_path", ("-i", "--input_path"), _V), Opt("target", ("-tp", "--target_path"), _V),
    Opt("golden", ("-gp", "--golden_path"), _V), Opt("output", ("-o", "--output_path"), _O),
    Opt("xlsx", ("--xlsx",), _F), Opt("stack_mode", ("-s", "--stack_mode"), _F),
    Opt("compare_only", ("-c", "--compare_only"), _F), Opt("fuzzy_match", ("-fm", "--fuzzy_match", "-f"), _F),
    Opt("highlight", ("-hl", "--highlight"), _F), Opt("cell_mapping", ("-cm", "--cell_mapping"), _O),
    Opt("api_mapping", ("-am", "--api_mapping"), _O), Opt("data_mapping", ("-dm", "--data_mapping"), _V),
    Opt("layer_mapping", ("-lm", "--layer_mapping"), _O),
    Opt("tensor_log", ("-tensor_log", "--is_print_compare_log"), _F),
    Opt("rank", ("--rank",), _V), Opt("step", ("--step",), _V), Opt("mode", ("-m", "--mode"), _V),
    Opt("fusion", ("-fr", "--fusion_rule_file"), _V), Opt("quant", ("-qfr", "--quant_fusion_rule_file"), _V),
    Opt("close", ("-cfr", "--close_fusion_rule_file"), _V),
    Opt("", ("-da", "--diff_analyze"), _F, "vcompare writes no diff_analyze json; --verdicts marks the first "
                                           "differing node of each chain (after --: vcompare compare ... -- "
                                           "--verdicts)"),
    Opt("", ("--consistent_check",), _F, "verl training-vs-inference checking is not supported"),
    Opt("", ("--backend",), _V, "verl training-vs-inference checking is not supported"),
    *(Opt("", (name,), _V, "offline-model running (-m offline_model) is not supported: compare the dumps")
      for name in ("--input_data", "--input_shape", "--output_size", "--dym_shape_range", "-ofs",
                   "--onnx_fusion_switch")),
)

TABLES = {Spelling.MSACCUCMP: MSACCUCMP_OPTIONS, Spelling.MSPROBE: MSPROBE_OPTIONS}
#: msprobe's ``-m/--mode`` values; vcompare runs ``auto`` (dump trees) and ``offline_data`` (Ascend dumps).
MSPROBE_MODES = ("auto", "offline_data", "torchair", "offline_model", "atb")
#: The fields of compare.json (msprobe's ``-i``): the two required, then the optional ones.
COMPARE_JSON_FIELDS = ("npu_path", "bench_path", "stack_path", "is_print_compare_log")
#: The two tools' forms, as every refusal of a mixed or unrecognised line names them.
FORMS = ("msaccucmp: vcompare compare -m MY_DUMP -g GOLDEN [-f FUSION.json] [-q QUANT.json] [-cf CLOSE.json] "
         "-out FOLDER; msprobe: vcompare compare -tp TARGET -gp GOLDEN -o FOLDER [-fm] [-lm FILE] [-am [FILE]] "
         "[-dm FILE] [-cm FILE], or vcompare compare -i compare.json -o FOLDER")


def _name(token: str) -> str:
    """The option name of a token (``--data_mapping=f.yaml`` -> ``--data_mapping``)."""
    return token.split("=", 1)[0] if token.startswith("--") else token


def detect(tokens: Sequence[str]) -> Spelling:
    """Whose spelling ``tokens`` are in (module doc: the options naming the dumps decide).

    Raises :class:`OptionError` when they hold both tools' (naming the options of each and the two
    forms) or neither's (naming the two forms; ``-l`` / ``-r`` are pointed at the main command).
    """
    msaccucmp: list[str] = []
    msprobe: list[str] = []
    for i, token in enumerate(tokens):
        name = _name(token)
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if name == "-m":
            (msprobe if following in MSPROBE_MODES else msaccucmp).append(name)
        elif name in ("--my_dump_path", "-g", "--golden_dump_path", "-out"):
            msaccucmp.append(name)
        elif name in ("-tp", "--target_path", "-gp", "--golden_path", "--input_path", "--mode"):
            msprobe.append(name)
        elif name == "-i" and following and not following.isdigit():
            msprobe.append("-i FILE.json")
    if msaccucmp and msprobe:
        raise OptionError(f"mixed spellings: {', '.join(dict.fromkeys(msaccucmp))} (msaccucmp) with "
                          f"{', '.join(dict.fromkeys(msprobe))} (msprobe); write one tool's form -- {FORMS}")
    if msaccucmp:
        return Spelling.MSACCUCMP
    if msprobe:
        return Spelling.MSPROBE
    hint = (" (-l / -r are vcompare's own spelling: vcompare -l LEFT -r RIGHT ..., without 'compare')"
            if any(_name(t) in ("-l", "--left", "-r", "--right") for t in tokens) else "")
    raise OptionError(f"name the two dumps in msaccucmp's or msprobe's form{hint}: {FORMS}")


def _unknown(token: str, spelling: Spelling) -> str:
    """The refusal of an option ``spelling``'s table does not hold: the other tool's (mixed),
    the main command's (goes after ``--``), a near miss (did you mean), or none of these."""
    other = Spelling.MSPROBE if spelling is Spelling.MSACCUCMP else Spelling.MSACCUCMP
    name = _name(token)
    if any(name in opt.names for opt in TABLES[other]):
        return (f"mixed spellings: {name} is {other.value}'s option, this line is in {spelling.value}'s; "
                f"write one tool's form -- {FORMS}")
    if name in _main_option_names():
        return (f"{name} is vcompare's own option: put it after --, "
                f"e.g. vcompare compare ... -- {name} ...")
    names = [n for opt in TABLES[spelling] for n in opt.names]
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    suggestion = f"did you mean {near[0]}? " if near else ""
    return f"no such {spelling.value} option: {name}; {suggestion}(vcompare compare --help lists them)"


def _main_option_names() -> frozenset[str]:
    """Every spelling of the main command's options (``vcompare -l ... --gate ...``)."""
    from .network import app  # here: the main command's typer declarations, only for a message

    command = typer.main.get_command(app)
    return frozenset(name for param in command.params for name in (*param.opts, *param.secondary_opts))


def parse(tokens: Sequence[str], spelling: Spelling) -> dict[str, str | bool]:
    """``tokens`` read with ``spelling``'s table: field -> value (``True`` for a switch, ``""`` for
    an optional value left out). ``--name=value`` is taken for long options; msaccucmp's
    ``-alg 0 1 5`` is read as ``0,1,5`` (single index digits after it, as msaccucmp reads them).

    Raises :class:`OptionError` for an unknown or refused option, an option given twice, a
    missing value or a stray argument.
    """
    by_name = {name: opt for opt in TABLES[spelling] for name in opt.names}
    values: dict[str, str | bool] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name = _name(token)
        inline = token[len(name) + 1:] if name != token else None
        opt = by_name.get(name)
        if opt is None:
            if not token.startswith("-"):
                raise OptionError(f"unexpected argument {token!r}: every value follows its option -- {FORMS}")
            raise OptionError(_unknown(token, spelling))
        if opt.refused:
            raise OptionError(f"{name} ({spelling.value}) is not taken: {opt.refused}")
        if opt.field in values:
            raise OptionError(f"{name}: given twice ({' / '.join(opt.names)} is one option)")
        i += 1
        if opt.arity is Arity.FLAG:
            if inline is not None:
                raise OptionError(f"{name} takes no value")
            values[opt.field] = True
            continue
        if inline is not None:
            value = inline
        elif opt.arity is Arity.OPTIONAL:
            value = tokens[i] if i < len(tokens) and not tokens[i].startswith("-") else ""
            i += 1 if value else 0
        elif i < len(tokens):
            value = tokens[i]
            i += 1
        else:
            raise OptionError(f"{name} needs a value")
        if opt.field == "algorithm" and spelling is Spelling.MSACCUCMP:
            digits = [value]
            while i < len(tokens) and len(tokens[i]) == 1 and tokens[i].isdigit() and digits[-1].isdigit():
                digits.append(tokens[i])
                i += 1
            value = ",".join(digits)
        values[opt.field] = value
    return values


def _pairs(table: Sequence[tuple[str | None, str]]) -> list[str]:
    """``[option, value, ...]`` for each (value, main-command option) of ``table`` whose value is given."""
    out: list[str] = []
    for value, option in table:
        if value is not None:
            out += [option, value]
    return out


def from_msaccucmp(line: MsaccucmpLine) -> Translation:
    """The main command's argv for an msaccucmp line (no notes today).

    ``-m`` / ``-g`` -> ``-l`` / ``-r``; ``-out FOLDER`` -> ``-o FOLDER`` (the main command writes
    ``FOLDER/result_{YYYYmmddHHMMSS}.csv`` there, as msaccucmp); no ``-out``: no ``-o`` (the
    current folder, as msaccucmp). ``-o`` with a number is the output-tensor index, else a result
    path (``compare_vector``); ``-op OP -i K`` -> ``-d OP -t input -i K``, ``-op OP -o K`` ->
    ``-d OP -t output -i K``, with ``-t`` given ``-i`` is its index. Raises :class:`OptionError`
    for a missing side, ``-i`` with ``-o K``, a tensor index without ``-op``, two result paths.
    """
    if line.left is None or line.right is None:
        raise OptionError(f"msaccucmp's form needs both -m MY_DUMP and -g GOLDEN -- {FORMS}")
    argv = ["-l", line.left, "-r", line.right]
    output_tensor, output = line.output_tensor, line.output
    if output_tensor is not None and not output_tensor.isdigit():  # compare_vector's -o PATH
        if output is not None:
            raise OptionError(f"two result paths: -out {output} and -o {output_tensor} (-o K is the output "
                              "tensor index with -op)")
        output, output_tensor = output_tensor, None
    if output is not None:
        argv += ["-o", output]
    argv += _pairs(((line.fusion, "-f"), (line.quant, "-q"), (line.close, "-cf"), (line.custom, "-custom"),
                    (line.algorithm, "-alg"), (line.op_range, "--range"), (line.select, "--select"),
                    (line.max_cmp_size, "-max"), (line.dump_version, "--dump-version"), (line.topn, "-n"),
                    (line.max_line, "--max-lines")))
    argv += [option for given, option in ((line.mapping_table, "-map"), (line.overflow, "--overflow"),
                                          (line.no_details, "--no-details"), (line.ffts, "-ffts"),
                                          (line.csv, "-csv")) if given]
    if (line.input_tensor is not None or output_tensor is not None or line.tensor_type is not None) and line.op is None:
        raise OptionError("-i K / -o K / -t choose a tensor of one operator: give -op OP (single-operator mode)")
    if line.op is not None:
        argv += ["-d", line.op]
    if line.input_tensor is not None and output_tensor is not None:
        raise OptionError("-i/--input_tensor and -o/--output_tensor exclude each other (as in msaccucmp)")
    if line.tensor_type is not None:
        if output_tensor is not None:
            raise OptionError(f"-t {line.tensor_type} with -o {output_tensor}: give -t TYPE -i K, or -o K alone")
        argv += ["-t", line.tensor_type] + (["-i", line.input_tensor] if line.input_tensor is not None else [])
    elif line.input_tensor is not None:
        argv += ["-t", "input", "-i", line.input_tensor]
    elif output_tensor is not None:
        argv += ["-t", "output", "-i", output_tensor]
    return Translation(spelling=Spelling.MSACCUCMP, argv=tuple(argv), notes=())


def read_compare_json(path: Path) -> dict[str, str | bool]:
    """msprobe's compare.json: an object with ``npu_path`` and ``bench_path`` (text, required),
    ``stack_path`` (text) and ``is_print_compare_log`` (true / false). Raises :class:`OptionError`
    for an unreadable file, text that is not JSON, another shape, a missing or mistyped field and a
    field msprobe does not define (naming the four)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise OptionError(f"-i {path}: cannot read: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, ValueError) as exc:
        raise OptionError(f"-i {path}: not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise OptionError(f"-i {path}: a JSON object is expected ({', '.join(COMPARE_JSON_FIELDS)})")
    unknown = sorted(set(data) - set(COMPARE_JSON_FIELDS))
    if unknown:
        raise OptionError(f"-i {path}: unknown field(s) {', '.join(unknown)}; compare.json has "
                          f"{', '.join(COMPARE_JSON_FIELDS)}")
    for key in COMPARE_JSON_FIELDS:
        value = data.get(key)
        if key in ("npu_path", "bench_path") and (not isinstance(value, str) or not value):
            raise OptionError(f"-i {path}: {key} must be a path (text), not {json.dumps(value)}")
        if key == "stack_path" and value is not None and not isinstance(value, str):
            raise OptionError(f"-i {path}: stack_path must be a path (text), not {json.dumps(value)}")
        if key == "is_print_compare_log" and value is not None and not isinstance(value, bool):
            raise OptionError(f"-i {path}: is_print_compare_log must be true or false, not {json.dumps(value)}")
    return data


def _check_stack_path(stack_path: str, target: str) -> None:
    """``stack_path`` must be the ``stack.json`` vcompare reads: beside the target's ``dump.json``
    (a dump.json target) or in the target folder's tree; elsewhere is refused (it would be unread)."""
    target_path = Path(target)
    stack = Path(stack_path).resolve()
    if target_path.suffix == ".json":
        if stack != (target_path.parent / "stack.json").resolve():
            raise OptionError(f"stack_path {stack_path}: vcompare reads the stack.json beside {target} "
                              f"({target_path.parent / 'stack.json'}); another file would not be read")
    elif not stack.is_relative_to(target_path.resolve()) or stack.name != "stack.json":
        raise OptionError(f"stack_path {stack_path}: vcompare reads the stack.json of each rank folder under "
                          f"{target}; another file would not be read")


def _rank_folder(path: str) -> str:
    """msprobe's single-rank form names a rank's ``dump.json``; vcompare is given its rank folder
    (the same tree: the main command takes two files for a two-file comparison)."""
    return os.path.dirname(path) or "." if os.path.basename(path) == "dump.json" else path


def from_msprobe(line: MsprobeLine, *, stamp: str) -> Translation:
    """The main command's argv for an msprobe line, and its notes.

    ``-tp`` / ``-gp`` (or compare.json's ``npu_path`` / ``bench_path``) -> ``-l`` / ``-r`` (a
    ``dump.json`` -> its rank folder);
    ``-o FOLDER`` (default ``./output``) -> ``-o FOLDER/compare_result_{stamp}.csv`` (``.xlsx``
    with ``--xlsx``); ``-fm`` -> ``--fuzzy-match``, ``-lm FILE`` -> ``--layer-mapping FILE``,
    ``-am [FILE]`` -> ``--api-mapping [FILE]``, ``-dm FILE`` -> ``--data-mapping FILE``,
    ``-cm FILE`` -> ``--cell-mapping FILE``, ``--rank`` -> ``--rank``, ``--step`` -> ``--iteration``;
    ``-m offline_data`` with ``-fr`` / ``-qfr`` / ``-cfr`` -> ``-f`` / ``-q`` / ``-cf``. ``-s``,
    ``-c``, ``-hl`` and the log switch change nothing vcompare does: a note says why.
    """
    notes: list[str] = []
    target, golden = line.target, line.golden
    if line.input_path is not None:
        if target is not None or golden is not None:
            raise OptionError("name the dumps once: -i compare.json or -tp TARGET -gp GOLDEN")
        data = read_compare_json(Path(line.input_path))
        target, golden = str(data["npu_path"]), str(data["bench_path"])
        stack_path = data.get("stack_path")
        if isinstance(stack_path, str):
            _check_stack_path(stack_path, target)
        if "is_print_compare_log" in data:
            notes.append("is_print_compare_log: vcompare prints a summary and the failing rows, not a log line "
                         "per operator (--quiet after -- for the result path only)")
    if target is None or golden is None:
        raise OptionError(f"msprobe's form needs -tp TARGET and -gp GOLDEN (or -i compare.json) -- {FORMS}")
    mode = line.mode or "auto"
    if mode not in ("auto", "offline_data"):
        raise OptionError(f"-m {mode}: vcompare compares dump trees (-m auto) and Ascend dumps (-m offline_data) "
                          f"only" + ("" if mode in MSPROBE_MODES else f"; msprobe's modes: {', '.join(MSPROBE_MODES)}"))
    rule_flags = [flag for flag, value in (("-fr", line.fusion), ("-qfr", line.quant), ("-cfr", line.close))
                  if value is not None]
    if rule_flags and mode != "offline_data":
        raise OptionError(f"{rule_flags[0]}: fusion rule files go with -m offline_data (as in msprobe)")
    folder = line.output or "./output"
    suffix = ".xlsx" if line.xlsx else ".csv"
    result = os.path.join(folder, f"compare_result_{stamp}{suffix}")
    argv = ["-l", _rank_folder(target), "-r", _rank_folder(golden), "-o", result]
    argv += _pairs(((line.fusion, "-f"), (line.quant, "-q"), (line.close, "-cf")))
    if line.fuzzy_match:
        argv.append("--fuzzy-match")
    for value, flag, main_option in ((line.layer_mapping, "-lm", "--layer-mapping"),
                                     (line.cell_mapping, "-cm", "--cell-mapping")):
        if value == "":
            raise OptionError(f"{flag} needs a mapping FILE (YAML, msprobe's format) in vcompare; "
                              "between a MindSpore and a PyTorch tree the built-in API mapping applies by itself")
        if value is not None:
            argv += [main_option, value]
    if line.api_mapping is not None:
        argv += ["--api-mapping", line.api_mapping or "builtin"]
    argv += _pairs(((line.data_mapping, "--data-mapping"), (line.rank, "--rank"), (line.step, "--iteration")))
    if line.stack_mode:
        notes.append("-s: the Stack column is written whenever the target holds stack.json (as msprobe does "
                     "without -s since 2025)")
    if line.highlight and not line.xlsx:
        notes.append("-hl: a .csv has no colours; --xlsx writes the workbook with failing rows highlighted")
    if line.tensor_log:
        notes.append("-tensor_log: vcompare prints a summary and the failing rows, not a log line per operator")
    return Translation(spelling=Spelling.MSPROBE, argv=tuple(argv), notes=tuple(notes))


def translate(argv: Sequence[str], *, stamp: str | None = None) -> Translation:
    """Translate an msaccucmp or msprobe ``compare`` line (without ``compare``) into the main
    command's argv (module doc). ``stamp``: the ``YYYYmmddHHMMSS`` of msprobe's result name
    [now, local time]. Raises :class:`OptionError` whose message is the diagnosis."""
    tokens = list(argv)
    extra: list[str] = []
    if "--" in tokens:
        cut = tokens.index("--")
        tokens, extra = tokens[:cut], tokens[cut + 1:]
    spelling = detect(tokens)
    values = parse(tokens, spelling)
    if spelling is Spelling.MSACCUCMP:
        line = from_msaccucmp(MsaccucmpLine(**values))  # type: ignore[arg-type]
    else:
        if stamp is None:
            from ..reports.files import file_stamp  # here: --help stays free of the report modules

            stamp = file_stamp()
        line = from_msprobe(MsprobeLine(**values), stamp=stamp)  # type: ignore[arg-type]
    return replace(line, argv=line.argv + tuple(extra))


def _option_lines(table: Sequence[Opt], line_type: type) -> str:
    """The help's list of a table: the options taken (by field order), then those refused."""
    order = [f.name for f in fields(line_type)]
    taken = sorted((opt for opt in table if not opt.refused), key=lambda opt: order.index(opt.field))
    text = "\n".join(f"    {', '.join(opt.names)}" + ("" if opt.arity is Arity.FLAG else
                                                       " [VALUE]" if opt.arity is Arity.OPTIONAL else " VALUE")
                     for opt in taken)
    refused = ", ".join(opt.names[0] for opt in table if opt.refused)
    return f"{text}\n    not taken (the message says what to use): {refused}"


HELP = """Usage: vcompare compare [msaccucmp's or msprobe's options] [-- vcompare's own options]

Run the main comparison (vcompare -l LEFT -r RIGHT ...) from msaccucmp's or msprobe's command line,
translated option by option (docs/migration.md). The translated line is printed on stderr, so the
next run can use vcompare's own spelling. Exit codes are the main command's (0 ok, 1 a gate failed,
3 incomplete, 2 cannot run).

Examples:

  # msaccucmp: Ascend dump vs Caffe/TF goldens through the fusion rule, out/result_{{ts}}.csv
  vcompare compare -m npu_dump -g golden_npy -f model.json -out out

  # msaccucmp: one operator's input tensor 0, element by element, into out/
  vcompare compare -m npu_dump -g golden_npy -f model.json -out out -op pool5 -i 0

  # msprobe: two dump steps, output/compare_result_{{ts}}.csv (--xlsx: .xlsx)
  vcompare compare -tp npu_dump/step0 -gp gpu_dump/step0 -o output

  # msprobe: the older form, and a MindSpore tree vs a PyTorch tree with a layer mapping
  vcompare compare -i compare.json -o output
  vcompare compare -tp ms_dump/step0 -gp pt_dump/step0 -o output -lm layer_mapping.yaml -am

  # either form, with vcompare's own options after --
  vcompare compare -tp a/step0 -gp b/step0 -o output -- --gate "CosineSimilarity>=0.99" --json r.json

msaccucmp's options (-m / -g / -out make the line msaccucmp's):
{msaccucmp}

msprobe's options (-tp / -gp / -i compare.json make the line msprobe's):
{msprobe}
"""


def help_text() -> str:
    """``vcompare compare --help``: the usage, examples and both tools' option lists."""
    return HELP.format(msaccucmp=_option_lines(MSACCUCMP_OPTIONS, MsaccucmpLine),
                       msprobe=_option_lines(MSPROBE_OPTIONS, MsprobeLine))


class RawArgv(TyperCommand):
    """Hands the command line to :func:`translate` as typed: click would parse ``-tp`` as an
    option of its own and swallow the ``--`` that starts vcompare's own options."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        ctx.meta["compat.argv"] = tuple(args)
        return super().parse_args(ctx, [])


compat_app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)


@compat_app.command(cls=RawArgv, add_help_option=False,
                    help="msaccucmp's and msprobe's compare command lines (vcompare compare --help).")
def compat_command(ctx: typer.Context) -> None:
    """``vcompare compare ...``: translate (:func:`translate`), say it, run the main command once."""
    argv: tuple[str, ...] = ctx.meta["compat.argv"]
    before_extra = argv[:argv.index("--")] if "--" in argv else argv
    if any(token in ("-h", "--help") for token in before_extra):
        typer.echo(help_text())
        raise typer.Exit(EXIT_OK)
    if not argv:  # a bare ``vcompare compare``: the help on stderr, exit 2 (as the main command)
        typer.echo(help_text(), err=True)
        raise typer.Exit(EXIT_CANNOT_RUN)
    try:
        translation = translate(argv)
    except OptionError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    import shlex  # here: only a run prints the translated line

    if "--quiet" not in translation.argv:
        err(f"{translation.spelling.value}'s spelling, run as: vcompare {shlex.join(translation.argv)}")
    for note in translation.notes:
        err(f"note: {note}")
    from .network import app  # here: the main command's typer app (its runner loads lazily)

    try:
        app(args=list(translation.argv), prog_name="vcompare", standalone_mode=True)
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (EXIT_OK if done.code is None else EXIT_CANNOT_RUN)
        raise typer.Exit(code) from None
