"""Hostile dump trees, round two (issue 17): the walk, special files, and naming every file that
could not be used (docs/reliability.md, "Hostile trees and special files").

Each test builds a copy of ``fixtures/demo`` with one kind of damage and runs it through the
command line (typer's CliRunner on ``compare.cli.app``: exit code and stderr) and the API
(``compare_network``). FIFOs are watched by :class:`FifoWatch`: it records whether anything
opened one (a reader blocked in ``open`` lets a non-blocking writer in) and then releases that
reader, so a regression fails the test instead of hanging it. Unreadable folders are simulated by
making ``os.scandir`` refuse them (root reads everything); :func:`test_whole_run_as_nobody` runs a
comparison as the unprivileged user ``nobody`` in a forked child, with an unwritable home.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders import tf_leaf

from compare import compare_network
from compare.api import ComparisonResult
from compare.cli import app
from compare.cli.gate import gate_app
from compare.errors import CompareError, OptionError, RuleError
from conftest import FIXTURES, ROOT

DEMO = FIXTURES / "demo"
#: The demo's dump leaf, below its ``-l`` folder.
LEAF = Path("20240101120000/0/demo_net/1/0")
#: Rows of the clean demo comparison (11 compared + 2 structurally missing).
CLEAN_COMPARED = 11
runner = CliRunner()


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A private copy of fixtures/demo (npu/, golden/, model.json)."""
    target = tmp_path / "demo"
    shutil.copytree(DEMO, target)
    return target


def _cli(demo: Path, *extra: object, left: Path | None = None, right: Path | None = None):
    """``vcompare -l npu -r golden -f model.json -o out.csv --json out.json EXTRA`` in-process."""
    args = ["-l", left or demo / "npu", "-r", right or demo / "golden", "-f", demo / "model.json",
            "-o", demo.parent / "out.csv", "--json", demo.parent / "out.json", *extra]
    return runner.invoke(app, [str(a) for a in args])


def _json(demo: Path) -> dict:
    return json.loads((demo.parent / "out.json").read_text())


def _skipped(document: dict) -> dict[str, str]:
    return {item["path"]: item["reason"] for item in document["skipped"]}


def _compared(result: ComparisonResult) -> int:
    return result.summary().get("compared", 0)


class FifoWatch:
    """Watch FIFOs: ``opened`` lists those something opened for reading (each then released)."""

    def __init__(self, fifos: list[Path]) -> None:
        self.fifos = fifos
        self.opened: list[Path] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            for fifo in self.fifos:
                try:
                    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # succeeds only when a reader has it open
                except OSError:
                    continue
                self.opened.append(fifo)
                os.close(fd)  # the reader sees end of file instead of waiting for ever

    def __enter__(self) -> FifoWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _mkfifo(path: Path) -> Path:
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)
    return path


def _refuse_listing(monkeypatch: pytest.MonkeyPatch, *folders: Path) -> None:
    """From now to the end of the test, ``os.scandir`` of ``folders`` raises PermissionError, as
    for a user without read access."""
    real = os.scandir
    refused = {os.path.abspath(f) for f in folders}

    def scandir(path: object = ".") -> object:
        if os.path.abspath(os.fspath(path)) in refused:  # type: ignore[arg-type]
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))  # type: ignore[arg-type]
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)


# --------------------------------------------------------------------------------------------
# 1. one bad link hides nothing


@pytest.mark.parametrize("kind", ["loop", "broken"])
def test_bad_link_beside_the_dump_folders_hides_nothing(demo: Path, kind: str) -> None:
    """``ln -s loop loop`` beside ``demo_net``, and one at the top: today every sibling folder at
    that level was dropped and the run ended "it is empty". A broken link there was passed over
    without a word."""
    links = [demo / "npu" / "20240101120000" / "0" / "loop", demo / "npu" / "zz"]
    for link in links:
        os.symlink(link.name if kind == "loop" else "/nonexistent/vcompare-target", link)
    result = _cli(demo)
    assert result.exit_code == 0, result.output
    what = "symbolic link loop" if kind == "loop" else "broken symbolic link"
    assert what in result.stderr and "2 file(s) not used" in result.stderr, result.stderr
    assert all(str(link) in result.stderr for link in links), result.stderr
    skipped = _skipped(_json(demo))
    assert all(what in skipped[str(link)] for link in links), skipped

    api = compare_network(demo / "npu", demo / "golden", demo / "model.json")
    assert _compared(api) == CLEAN_COMPARED
    assert {str(s.path) for s in api.skipped} >= {str(link) for link in links}
    assert all(s.side == "left" for s in api.skipped)


def test_unreadable_sibling_folder_is_named_and_passed_over(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A newer time folder the user may not list: the older leaf is used, and a note says which
    folder could not be read (today: silently passed over)."""
    newer = demo / "npu" / "20240101130000"
    shutil.copytree(demo / "npu" / LEAF, newer / "0" / "demo_net" / "1" / "0")
    _refuse_listing(monkeypatch, newer)
    result = _cli(demo)
    assert result.exit_code == 0, result.output
    assert f"permission denied: {newer}" in result.stderr, result.stderr
    assert str(demo / "npu" / LEAF) in result.stderr  # the readable leaf was used
    assert _skipped(_json(demo))[str(newer)] == f"permission denied: {newer}"
    api = compare_network(demo / "npu", demo / "golden", demo / "model.json")
    assert _compared(api) == CLEAN_COMPARED
    assert [str(s.path) for s in api.skipped] == [str(newer)]


def test_bad_link_in_trees_compared_rank_by_rank(tmp_path: Path) -> None:
    """``--rank all`` (each rank in turn): a link loop among the rank folders of both trees is
    named once per side, every rank is still compared (today: "no rank / iteration" or ranks lost)."""
    sides = {}
    for side in ("a", "b"):
        root = tmp_path / side
        for device in (0, 1):
            tf_leaf(root, "20240101120000", device)
        os.symlink("loop", root / "20240101120000" / "loop")
        sides[side] = root
    result = runner.invoke(app, ["-l", str(sides["a"]), "-r", str(sides["b"]), "--rank", "all",
                                 "-o", str(tmp_path / "r.csv"), "--json", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    for side, root in (("left", sides["a"]), ("right", sides["b"])):
        assert f"{side}: 1 file(s) not used" in result.stderr and str(root / "20240101120000" / "loop") in result.stderr
    document = json.loads((tmp_path / "r.json").read_text())
    assert sorted((item["side"], item["path"]) for item in document["skipped"]) == [
        ("left", str(sides["a"] / "20240101120000" / "loop")), ("right", str(sides["b"] / "20240101120000" / "loop"))]
    assert {row["rank"] for row in document["rows"] if row["status"] == "compared"} == {0, 1}


# --------------------------------------------------------------------------------------------
# 2. files never named


def test_special_entries_under_dump_names_are_named_and_never_opened(demo: Path) -> None:
    """A FIFO, a link to /dev/zero, a folder and a broken link under golden file names, and a
    FIFO under a newer NPU dump name: each named (note, row, JSON), none opened; today they
    vanished and the rows said only "no golden tensor"."""
    golden = demo / "golden"
    fifo = _mkfifo(golden / "pool1.0.1704110405000005.npy")
    zero = golden / "relu1.0.1704110405000004.npy"
    zero.unlink()
    os.symlink("/dev/zero", zero)
    folder = golden / "fc1.0.1704110405000006.npy"
    folder.unlink()
    folder.mkdir()
    broken = golden / "prob.0.1704110405000007.npy"
    broken.unlink()
    os.symlink("prob.npy.gone", broken)
    npu_fifo = _mkfifo(demo / "npu" / LEAF / "Pooling.pool1.4.1.1704110400009999")
    with FifoWatch([fifo, npu_fifo]) as watch:
        result = _cli(demo)
        api = compare_network(demo / "npu", golden, demo / "model.json")
    assert watch.opened == [], f"FIFOs were opened: {watch.opened}"
    assert result.exit_code == 0, result.output
    assert "right: 4 file(s) not used" in result.stderr and "left: 1 file(s) not used" in result.stderr
    assert "FIFO (named pipe), not a regular file: never opened" in result.stderr
    document = _json(demo)
    skipped = _skipped(document)
    expected = {fifo: "a FIFO (named pipe)", zero: "a symbolic link to /dev/zero, a character device",
                folder: "a folder under a dump file's name", broken: "a broken symbolic link",
                npu_fifo: "a FIFO (named pipe)"}
    for path, reason in expected.items():
        assert skipped[str(path)].startswith(reason), (path, skipped)
    assert {item["side"] for item in document["skipped"] if item["path"] == str(npu_fifo)} == {"left"}
    pool1 = [row for row in document["rows"] if row["tensor_id"] == "pool1:output:0"]
    assert pool1 and any(fifo.name in reason and "FIFO" in reason for reason in pool1[0]["reasons"]), pool1
    assert {str(s.path) for s in api.skipped} == {str(p) for p in expected}
    assert api.to_dict()["skipped"] == document["skipped"]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(document, json.loads((ROOT / "docs" / "result-schema.json").read_text()))


def test_skipped_list_survives_vcompare_gate(demo: Path) -> None:
    """The JSON ``skipped`` list round-trips through ``vcompare gate`` (saved result re-checked)."""
    _mkfifo(demo / "golden" / "pool1.0.1704110405000005.npy")
    assert _cli(demo).exit_code == 0
    saved = demo.parent / "out.json"
    again = runner.invoke(gate_app, [str(saved), "--gate", "CosineSimilarity>=0.9", "--json",
                                str(demo.parent / "again.json")])
    assert again.exit_code in (0, 1, 3), again.output
    assert json.loads((demo.parent / "again.json").read_text())["skipped"] == _json(demo)["skipped"]


def _hashed_pool1(demo: Path, mapping_text: str) -> Path:
    """The pool1 golden file renamed to the hashed name 1001.npy, with ``mapping_text`` as mapping.csv."""
    golden = demo / "golden"
    (golden / "pool1.0.1704110405000005.npy").rename(golden / "1001.npy")
    table = golden / "mapping.csv"
    table.write_text(mapping_text, encoding="utf-8")
    return table


def _pool1_compared(document: dict) -> bool:
    return any(row["tensor_id"] == "pool1:output:0" and row["status"] == "compared" for row in document["rows"])


def test_mapping_csv_with_a_byte_order_mark_is_read(demo: Path) -> None:
    """A spreadsheet's UTF-8 BOM before the first hashed name (today: that row never matched)."""
    _hashed_pool1(demo, "\ufeff1001.npy,pool1.0.1704110405000005.npy\n")
    result = _cli(demo)
    assert result.exit_code == 0, result.output
    assert _pool1_compared(_json(demo)), result.stderr
    assert "not used" not in result.stderr


def test_oversized_mapping_field_skips_that_row_only(demo: Path) -> None:
    """A 200,000-character field (over csv.field_size_limit): that row is refused and named with
    its file and line; the rows after it are read (today: the whole mapping.csv was dropped)."""
    table = _hashed_pool1(demo, "1000.npy," + "x" * 200_000 + "\n1001.npy,pool1.0.1704110405000005.npy\n")
    result = _cli(demo)
    assert result.exit_code == 0, result.output
    document = _json(demo)
    assert _pool1_compared(document), result.stderr
    assert "mapping.csv (row 1: field larger than field limit" in result.stderr, result.stderr
    assert _skipped(document)[str(table)].startswith("row 1: field larger than field limit")
    api = compare_network(demo / "npu", demo / "golden", demo / "model.json")
    assert [(s.side, s.path) for s in api.skipped] == [("right", table)]


def test_mapping_csv_that_is_a_fifo_is_named_never_opened(demo: Path) -> None:
    """mapping.csv itself a FIFO: the hashed file's row says so (today: "no mapping.csv")."""
    table = _hashed_pool1(demo, "")
    _mkfifo(table)
    with FifoWatch([table]) as watch:
        result = _cli(demo)
    assert watch.opened == []
    assert result.exit_code == 0, result.output
    reasons = _skipped(_json(demo))
    assert reasons[str(table)] == "mapping.csv not read: a FIFO (named pipe), not a regular file: never opened"
    assert "mapping.csv is not a regular file" in reasons[str(demo / "golden" / "1001.npy")]


@pytest.mark.parametrize("flag", ["-f", "--mapping", "--policy", "-l"])
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_fifo_or_device_as_an_option_file_is_refused_at_once(demo: Path, flag: str, kind: str) -> None:
    """``-f /dev/zero`` was read until memory ran out, a FIFO blocked: refused, exit 2, unopened."""
    if kind == "fifo":
        special = _mkfifo(demo.parent / "special")
        what = "a FIFO (named pipe)"
    else:
        special = demo.parent / "special"
        os.symlink("/dev/zero", special)
        what = "a character device"
    extra: list[object] = [] if flag == "-l" else [flag, special]
    with FifoWatch([special] if kind == "fifo" else []) as watch:
        result = _cli(demo, *extra, left=special if flag == "-l" else None)
    assert watch.opened == []
    assert result.exit_code == 2, result.output
    assert f"error: {flag} {special}: {what}" in result.stderr and "not a regular file" in result.stderr, \
        result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("argument", ["fusion_rule", "mapping", "policy", "left"])
def test_fifo_as_an_api_argument_is_refused(demo: Path, argument: str) -> None:
    special = _mkfifo(demo.parent / "special.json")
    kwargs: dict[str, object] = {"left": demo / "npu", "right": demo / "golden", "fusion_rule": demo / "model.json"}
    kwargs[argument] = special
    expected = {"fusion_rule": RuleError, "mapping": OptionError, "policy": OptionError, "left": CompareError}
    with FifoWatch([special]) as watch, pytest.raises(expected[argument]) as caught:
        compare_network(**kwargs)  # type: ignore[arg-type]
    assert watch.opened == []
    assert "a FIFO (named pipe), not a regular file" in str(caught.value)


# --------------------------------------------------------------------------------------------
# 3. an unreadable leaf folder says so


def test_unreadable_leaf_says_permission_denied(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The only dump folder of the tree cannot be listed: "permission denied: PATH" (today: "it is
    empty", which sends the user looking for a missing dump)."""
    leaf = demo / "npu" / LEAF
    _refuse_listing(monkeypatch, leaf)
    result = _cli(demo)
    assert result.exit_code == 2, result.output
    assert f"permission denied: {leaf}" in result.stderr, result.stderr
    assert "empty" not in result.stderr and "fusion rule" not in result.stderr
    with pytest.raises(CompareError, match=f"permission denied: {leaf}"):
        compare_network(demo / "npu", demo / "golden", demo / "model.json")
    given = runner.invoke(app, ["-l", str(leaf), "-r", str(demo / "golden"), "-f", str(demo / "model.json"),
                                "-o", str(demo.parent / "x.csv")])
    assert given.exit_code == 2 and f"permission denied: {leaf}" in given.stderr, given.stderr


# --------------------------------------------------------------------------------------------
# the whole comparison as an unprivileged user


NOBODY = 65534


def _kernel_objects() -> dict[str, bytes] | None:
    """The files of this machine's built kernels (index and objects), read while still root."""
    import llvmlite.binding as llvm

    from compare.kernels import native

    if native.kernels() is None:
        return None
    key = native._key(llvm, native._wide(llvm))
    for folder in (native._AOT, native._cache_dir(), native._cache_dir() / native._private_name()):
        index = folder / native._index_name(key)
        if index.is_file():
            files = {index.name: index.read_bytes()}
            for entry in json.loads(files[index.name])["objects"].values():
                files[entry["file"]] = (folder / entry["file"]).read_bytes()
            return files
    return None


def _as_nobody(work: Path, home: Path, objects: dict[str, bytes], jobs: list[tuple[str, list[str]]]) -> dict:
    """Fork; in the child drop to uid/gid 65534 with HOME=``home`` and no cache variables, forget
    the loaded kernels (so the cache under HOME is looked for again), run each job's command line
    through CliRunner, and send back ``{name: [exit code, stderr]}`` (or ``{"setuid": reason}``).

    The child's kernel build is replaced by a copy of this machine's objects (the real build runs
    the interpreter, which lives where nobody may not read here); everything else -- choosing the
    cache folder, refusing the home, loading in memory, the note -- is the real code.
    """
    from compare.kernels import native

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        answer: dict = {}
        try:
            try:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            except OSError as exc:
                answer = {"setuid": str(exc)}
            else:
                for var in ("VCOMPARE_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME"):
                    os.environ.pop(var, None)
                os.environ["HOME"] = str(home)

                def copied_build(index: Path, llvm: object, wide: bool) -> None:
                    for name, data in objects.items():  # same key, so the same file names
                        (index.parent / name).write_bytes(data)

                native._tried, native._loaded, native.status = False, None, "not loaded yet"
                native.notes.clear()
                native._packaged_dir = lambda: work / "no-packaged-kernels"  # type: ignore[assignment]
                native.build = copied_build  # type: ignore[assignment]
                for name, argv in jobs:
                    done = runner.invoke(app, argv)
                    crash = done.exception if not isinstance(done.exception, (SystemExit, type(None))) else None
                    answer[name] = [done.exit_code, done.stderr + (f"\nraised {crash!r}" if crash else "")]
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, never raised in a fork
            answer = {"child": f"{type(exc).__name__}: {exc}"}
        with os.fdopen(write, "w") as pipe:
            json.dump(answer, pipe)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(text or "{}")


def test_whole_run_as_nobody(demo: Path) -> None:
    """As uid 65534 with an unwritable HOME: a folder of the tree nobody may list and a link into a
    folder nobody may enter are named and passed over, the comparison runs and says the kernels
    were built for this run only; an unreadable leaf says "permission denied: PATH"."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to the unprivileged user nobody (uid 65534)")
    objects = _kernel_objects()
    if objects is None:
        pytest.skip("the native kernels of this machine are not built: nothing to load as nobody")
    assert _cli(demo).exit_code == 0  # every module the child needs is imported now (it may not read them later)
    work = Path(tempfile.mkdtemp(prefix="vcompare-nobody-", dir="/tmp"))  # tmp_path's parents are root's only
    try:
        tree = work / "demo"
        shutil.copytree(demo, tree)
        lonely = work / "lonely"
        shutil.copytree(tree / "npu", lonely)
        newer = tree / "npu" / "20240101130000"
        shutil.copytree(tree / "npu" / LEAF, newer / "0" / "demo_net" / "1" / "0")
        private = work / "private"
        (private / "inner").mkdir(parents=True)
        secret = tree / "npu" / "20240101120000" / "0" / "secret"
        os.symlink(private / "inner", secret)
        home = work / "home"
        home.mkdir()
        out = work / "out"
        out.mkdir()
        for path in [work, *work.rglob("*")]:
            if not path.is_symlink():
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
        os.chmod(out, 0o777)
        os.chmod(home, 0o555)  # root's: nobody cannot create ~/.cache there
        os.chmod(newer, 0o700)  # root's: nobody may not list it
        os.chmod(private, 0o700)  # nobody may not enter it: the link beside demo_net cannot be followed
        os.chmod(lonely / LEAF, 0o700)  # the only leaf of this tree
        common = ["-r", str(tree / "golden"), "-f", str(tree / "model.json")]
        answer = _as_nobody(work, home, objects, [
            ("tree", ["-l", str(tree / "npu"), *common, "-o", str(out / "a.csv"), "--json", str(out / "a.json")]),
            ("leaf", ["-l", str(lonely), *common, "-o", str(out / "b.csv")]),
        ])
        if "setuid" in answer:
            pytest.skip(f"cannot switch to uid {NOBODY} here: {answer['setuid']}")
        assert "child" not in answer, answer
        code, stderr = answer["tree"]
        assert code == 0, stderr
        assert f"permission denied: {newer}" in stderr, stderr
        assert f"permission denied: {secret}" in stderr, stderr
        assert "kernels were compiled for this run only" in stderr and str(home / ".cache") in stderr, stderr
        document = json.loads((out / "a.json").read_text())
        assert document["counts"]["compared"] == CLEAN_COMPARED
        assert {item["path"] for item in document["skipped"]} == {str(newer), str(secret)}
        code, stderr = answer["leaf"]
        assert code == 2 and f"permission denied: {lonely / LEAF}" in stderr, stderr
        assert not any(home.iterdir())
    finally:
        for path in [work, *work.rglob("*")]:
            if not path.is_symlink():
                os.chmod(path, 0o755)
        shutil.rmtree(work, ignore_errors=True)
