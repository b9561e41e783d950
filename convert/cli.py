"""``vconvert``: the conversion toolkit's command line. Options -> library calls; errors -> exit codes.

Subcommands (the manual's option spellings are kept; see ``docs/convert.md``):

- ``dump``  -- the reference's ``convert``: dump files -> ``.npy`` / ``.bin`` (optionally in another layout);
- ``convert`` -- ``dump`` under the reference's name, with the same options, so that the MindSpore
  manuals' ``msaccucmp.py convert -d FILE -out DIR -f NCHW -t npy`` works as ``vconvert convert ...``;
- ``data``  -- ``dump_data_conversion``: golden ``.npy`` <-> dump files;
- ``shape`` -- ``shape_conversion``: one dump file's tensors to a layout;
- ``txt``   -- "view a dump file": tensors as text, one value per line;
- ``inplace`` -- ``inplace_layer_process``: a Caffe prototxt without in-place layers;
- ``rename-npy`` -- golden ``.npy`` files (tfdbg, by hand) renamed to ``{op}.{index}.{timestamp}.npy``.

``vconvert --version`` prints ``vconvert X.Y.Z`` (the installed vcompare distribution's version,
as ``vcompare --version`` prints it).

Exit codes: **0** every file converted; **1** some files failed (listed in
``OUT/convert_failed_file_list.txt`` with the reason -- on stderr when the list cannot be written,
a full disk --, the others were converted; for ``rename-npy``: some files refused, the others
renamed); **2** nothing could run (bad option,
missing path, refused plugin, unreadable prototxt), with a one-line message naming the file and
the problem. Errors become exit codes only here, in :func:`_run_safely` / :func:`run`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, TypeVar

import typer

from .exits import EXIT_CANNOT_RUN, EXIT_OK, EXIT_SOME_FAILED

if TYPE_CHECKING:
    from .layouts import PluginSet
    from .tool.batch import ConvertReport
    from .tool.inplace import InplaceResult
    from .tool.rename_npy import RenameReport

T = TypeVar("T")


#: Notes and failures shown on stderr before "... and N more".
MAX_SHOWN = 20

app = typer.Typer(
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Convert Ascend operator dumps: to .npy/.bin (any layout), npy <-> dump, and to text; "
         "prepare goldens (Caffe prototxt without in-place layers, .npy names).",
)


def _err(message: str) -> None:
    typer.echo(f"vconvert: {message}", err=True)


def _version_callback(value: bool) -> None:
    """``--version``: print the installed version and exit (the form of ``vcompare --version``)."""
    if value:
        from importlib.metadata import PackageNotFoundError, version  # here: only --version reads it

        try:
            typer.echo(f"vconvert {version('vcompare')}")
        except PackageNotFoundError:  # a source tree that was never installed
            typer.echo("vconvert (version unknown: vcompare is not installed, only its source tree is on the path)")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_version_callback,
                                 help="Print the version and exit."),
) -> None:
    """The options of ``vconvert`` itself (before a subcommand)."""


def _run_safely(action: Callable[[], T]) -> T:
    """Run a library call; every expected error becomes a one-line message and exit 2 (the one place)."""
    from .errors import CompareError  # here: importing convert.cli loads typer alone (--help)
    from .layouts import LayoutError  # here: numpy costs ~115 ms at start-up

    try:
        return action()
    except (CompareError, LayoutError) as exc:
        _err(f"error: {exc}")
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        _err(f"error: {where}{exc.strerror or exc}")
    raise typer.Exit(EXIT_CANNOT_RUN)


def _finish(report: ConvertReport) -> None:
    """Print the report (notes and failures on stderr, summary on stdout) and exit 0 or 1.

    Failures beyond :data:`MAX_SHOWN` are left to the failed-file list -- unless the list could
    not be written (a full disk): then every failure is printed, and why the list is missing.
    """
    for note in report.notes[:MAX_SHOWN]:
        _err(f"note: {note}")
    if len(report.notes) > MAX_SHOWN:
        _err(f"note: ... and {len(report.notes) - MAX_SHOWN} more")
    failed = list(report.failed.items())
    shown = failed if report.failed_list_error else failed[:MAX_SHOWN]
    for path, reasons in shown:
        _err(f"failed: {path}: {'; '.join(reasons)}")
    if len(failed) > len(shown):
        _err(f"failed: ... and {len(failed) - MAX_SHOWN} more (see {report.failed_list})")
    if report.failed_list_error:
        _err(f"error: {report.failed_list_error}: the {len(failed)} failed file(s) are listed above only")
    typer.echo(report.summary())
    raise typer.Exit(EXIT_OK if report.all_converted else EXIT_SOME_FAILED)


def _plugins(custom: Optional[Path]) -> PluginSet | None:
    if custom is None:
        return None
    from .errors import OptionError  # here: importing convert.cli loads typer alone (--help)
    from .layouts import load_plugins  # here: numpy costs ~115 ms at start-up

    if not custom.is_dir():
        why = "no such folder" if not custom.exists() else "not a folder"
        raise OptionError(f"-custom {custom}: {why} (give the folder that holds format_convert/)")
    return load_plugins(custom)


_VERSION_HELP = "Dump layout: 1 = pure protobuf, 2 = binary (default: detected per file)."
_WORKERS_HELP = "Parallel worker processes for a folder: 0 = one per CPU (default), 1 = serial."
_CUSTOM_HELP = "Plugin root holding format_convert/convert_{FROM}_to_{TO}.py (overrides built-ins)."


@app.command("dump", help="Dump files (a file, a folder or a comma-separated list) -> .npy/.bin files, "
                          "every input, output and buffer; with -f converted to a layout.\n\n"
                          "Example: vconvert dump -d dump/0 -out npy -f NCHW")
def dump_command(
    dump_path: str = typer.Option(..., "-d", "--dump-path", "--dump_path",
                                  help="Dump file, folder, or comma-separated list of them."),
    out: Path = typer.Option(..., "-out", "--out", "--output", help="Output folder (created if needed)."),
    fmt: Optional[str] = typer.Option(None, "-f", "--format", help="Target layout, e.g. NCHW, NHWC, ND, HWCN."),
    shape: Optional[str] = typer.Option(None, "-s", "--shape",
                                        help="Target shape d0,d1,... (needs -f; default: each tensor's original shape)."),
    output_index: Optional[int] = typer.Option(None, "-o", "--output-tensor", "--output_tensor", min=0,
                                               help="Only output N."),
    input_index: Optional[int] = typer.Option(None, "-i", "--input-tensor", "--input_tensor", min=0,
                                              help="Only input N."),
    out_type: str = typer.Option("npy", "-t", "--type", help="npy, bin (raw) or msnpy (MindSpore naming)."),
    version: Optional[int] = typer.Option(None, "-v", "--version", min=1, max=2, help=_VERSION_HELP),
    custom: Optional[Path] = typer.Option(None, "-custom", "--custom", "-c", "--custom_script_path",
                                          help=_CUSTOM_HELP),
    workers: int = typer.Option(0, "--workers", min=0, help=_WORKERS_HELP),
) -> None:
    def action() -> ConvertReport:
        from .errors import OptionError  # here: importing convert.cli loads typer alone (--help)
        from .tool.convert_dump import DumpConvertOptions, convert_dumps, parse_shape  # here: ~160 ms at start-up

        if output_index is not None and input_index is not None:
            raise OptionError("-o and -i exclude each other: select one output or one input")
        if fmt is None and (shape is not None or custom is not None):
            raise OptionError(f"{'-s' if shape is not None else '-custom'} needs -f (the target format)")
        kind, index = ("output", output_index) if output_index is not None else (
            ("input", input_index) if input_index is not None else (None, None))
        options = DumpConvertOptions(
            output_type=out_type, target_format=fmt,
            target_shape=parse_shape(shape, strict=False) if shape is not None else None,
            kind=kind, index=index, version=version, plugins=_plugins(custom), workers=workers)
        return convert_dumps(dump_path, out, options)

    _finish(_run_safely(action))


app.command("convert", help="The reference tool's name for 'vconvert dump' (msaccucmp.py convert), with the "
                            "same options: dump files -> .npy/.bin files; with -f converted to a layout.\n\n"
                            "Example: vconvert convert -d DUMP_FILE -out ./output -f NCHW -t npy")(dump_command)


@app.command("data", help="The manual's dump_data_conversion: golden .npy -> dump files (-target dump), "
                          "or dump files -> .npy (-target numpy).\n\n"
                          "Example: vconvert data -type caffe -target dump -i caffe_npy -o caffe_dump")
def data_command(
    data_type: str = typer.Option(..., "-type", "--data-type", help="caffe, tf, quant, offline or sim."),
    target: str = typer.Option(..., "-target", "--target", help="dump (npy -> dump) or numpy (dump -> npy)."),
    input_path: str = typer.Option(..., "-i", "--input", help="File, folder or comma-separated list."),
    out: Path = typer.Option(..., "-o", "-out", "--output", help="Output folder (created if needed)."),
    version: Optional[int] = typer.Option(None, "-v", "--version", min=1, max=2,
                                          help="Dump layout to write (default 2, binary) or to read (default: detect)."),
    workers: int = typer.Option(0, "--workers", min=0, help=_WORKERS_HELP),
) -> None:
    def action() -> ConvertReport:
        from .tool.data_conversion import convert_data  # here: ~160 ms at start-up

        return convert_data(input_path, out, data_type, target, version=version, workers=workers)

    _finish(_run_safely(action))


@app.command("shape", help="The manual's shape_conversion: one dump file's outputs (or inputs) to a layout, "
                           "as FILE.{output|input}.{index}.{d0}x{d1}x....npy.\n\n"
                           "Example: vconvert shape -i Conv2D.conv1.4.1700000000004805 -format NCHW -o out")
def shape_command(
    dump_file: Path = typer.Option(..., "-i", "--input", help="One dump file."),
    fmt: str = typer.Option(..., "-format", "--format", help="Target layout, e.g. NCHW, NHWC, ND, HWCN, FRACTAL_Z."),
    out: Path = typer.Option(..., "-o", "-out", "--output", help="Output folder (created if needed)."),
    shape: Optional[str] = typer.Option(None, "-shape", "--shape",
                                        help="Target shape ([0-9]+,)+[0-9]+, each > 0 (default: the tensor's original shape)."),
    tensor: str = typer.Option("output", "-tensor", "--tensor", help="input or output (default output)."),
    index: Optional[int] = typer.Option(None, "-index", "--index", min=0,
                                        help="Tensor index (default: every tensor of that kind)."),
    custom: Optional[Path] = typer.Option(None, "-custom", "--custom", "-c", help=_CUSTOM_HELP),
    version: Optional[int] = typer.Option(None, "-v", "--version", min=1, max=2, help=_VERSION_HELP),
) -> None:
    def action() -> ConvertReport:
        from .tool.convert_dump import convert_shape, parse_shape  # here: ~160 ms at start-up

        target = parse_shape(shape, strict=True) if shape is not None else None
        return convert_shape(dump_file, out, fmt, shape=target, tensor=tensor, index=index,
                             plugins=_plugins(custom), version=version)

    _finish(_run_safely(action))


@app.command("txt", help="View dump files: every tensor (of dump files or .npy files) flattened, one value per "
                         "line, as {name}.{input|output}.{i}.txt, after a '# shape=... dtype=... format=...' line.\n\n"
                         "Example: vconvert txt -i dump/0 -o txt")
def txt_command(
    input_path: str = typer.Option(..., "-i", "--input", help="Dump or .npy file, folder, or comma-separated list."),
    out: Path = typer.Option(..., "-o", "-out", "--output", help="Output folder (created if needed)."),
    no_header: bool = typer.Option(False, "--no-header", help="Omit the '# shape=... dtype=...' first line."),
    version: Optional[int] = typer.Option(None, "-v", "--version", min=1, max=2, help=_VERSION_HELP),
    workers: int = typer.Option(0, "--workers", min=0, help=_WORKERS_HELP),
) -> None:
    def action() -> ConvertReport:
        from .tool.to_text import to_text  # here: ~160 ms at start-up

        return to_text(input_path, out, header=not no_header, version=version, workers=workers)

    _finish(_run_safely(action))


@app.command("inplace", help="The manual's inplace_layer_process: rewrite a Caffe prototxt so that no layer "
                             "works in place (an in-place top gets a blob named after its layer; later "
                             "consumers are rewired), written as new_{name} beside it.\n\n"
                             "Example: vconvert inplace -i /home/user/resnet50.prototxt")
def inplace_command(
    model: Path = typer.Option(..., "-i", "--input", help="The .prototxt file."),
    out: Optional[Path] = typer.Option(None, "-o", "--output",
                                       help="Where to write it (default: new_{name} beside the input)."),
) -> None:
    def action() -> InplaceResult:
        from .tool.inplace import remove_inplace_file  # here: protobuf costs ~28 ms at start-up

        return remove_inplace_file(model, out)

    result = _run_safely(action)
    for rename in result.renames:
        users = f"; read by {', '.join(rename.consumers)}" if rename.consumers else ""
        typer.echo(f"layer {rename.layer or '#' + str(rename.layer_index)}: top {rename.old} -> {rename.new}{users}")
    for note in result.notes:
        _err(f"note: {note}")
    typer.echo(result.summary())
    raise typer.Exit(EXIT_OK)


@app.command("rename-npy", help="Rename golden .npy files saved by tfdbg or by hand (also in subfolders) to "
                                "{op_name}.{output_index}.{timestamp}.npy in the folder: / -> _, : -> ., a "
                                "16-digit timestamp added or replaced. Valid names are left alone; "
                                "collisions are refused.\n\n"
                                "Example: vconvert rename-npy -i tf_npy --dry-run")
def rename_npy_command(
    folder: Path = typer.Option(..., "-i", "--input", help="Folder of .npy files."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only print what would be renamed."),
) -> None:
    def action() -> RenameReport:
        from .tool.rename_npy import rename_npy  # here: ~7 ms at start-up

        return rename_npy(folder, dry_run=dry_run)

    report = _run_safely(action)
    arrow = "would rename" if report.dry_run else "renamed"
    for move in report.renamed:
        note = f" ({move.note})" if move.note else ""
        typer.echo(f"{arrow}: {move.old} -> {move.new.name}{note}")
    for path, reason in report.refused:
        _err(f"refused: {path}: {reason}")
    typer.echo(report.summary())
    raise typer.Exit(EXIT_OK if report.all_renamed else EXIT_SOME_FAILED)


#: click's UsageError, found through typer's public BadParameter (typer may vendor its own click).
_UsageError: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def run(argv: list[str] | None = None) -> int:
    """Run ``vconvert`` with ``argv`` and return the exit code (usage errors as one line, code 2)."""
    args = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    try:
        code = app(args=args, prog_name="vconvert", standalone_mode=False)
    except _UsageError as exc:
        ctx = getattr(exc, "ctx", None)
        command = f" {ctx.info_name}" if ctx is not None and ctx.parent is not None else ""
        _err(f"error: {exc.format_message()} (see vconvert{command} --help)")  # type: ignore[attr-defined]
        return EXIT_CANNOT_RUN
    except (typer.Abort, KeyboardInterrupt):
        _err("interrupted")
        return 130
    return int(code or 0)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    from .signals import Interrupted, interruptible  # here: importing convert.cli loads typer alone

    try:
        with interruptible():
            code = run(argv)
    except Interrupted as stop:
        sys.stderr.write(f"vconvert: {stop}: files already written are complete; the one in progress was not kept\n")
        sys.exit(stop.exit_code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
