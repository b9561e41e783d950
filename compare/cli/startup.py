"""Start-up of the console-script process, in one place.

- The cyclic garbage collector is held off while the modules load (:func:`hold_gc`, called by
  :func:`compare.cli.main.main` only) and turned back on, with the start-up objects frozen out of
  its scans, when the command starts its work (:func:`start_up_done`).
- The heavy modules (numpy, numba, pandas, the loaders) are imported inside the command
  functions, never when ``compare.cli`` is imported: ``vcompare --help`` answers in ~0.1 s.
  rich (~15 ms) is imported for a help page (:mod:`compare.cli.helppage`) and for the progress
  bar on a terminal only: never by ``--version``, a usage error or a run in a CI log.
- :func:`compare.cli.main.main` ends the process with ``os._exit`` once every output is written
  and flushed (the interpreter's teardown of numba and numpy costs ~0.15 s a run); the comparison
  result is held until then (:func:`keep_until_exit`): freeing its records one by one when the
  command returns costs ~2.5 us a row (0.25 s for the 100,000 rows of a statistics run).
"""

from __future__ import annotations

import gc

#: True while :func:`hold_gc` holds the cyclic garbage collector off during start-up.
_gc_held = False
#: True in the console-script process (:func:`hold_gc` was called): it ends with ``os._exit``.
_console_script = False
#: What the console-script process holds until its ``os._exit`` (:func:`keep_until_exit`).
_kept: list[object] = []


def hold_gc() -> None:
    """Hold the cyclic garbage collector off until :func:`start_up_done` (console script only)."""
    global _gc_held, _console_script
    _console_script = True
    if gc.isenabled():
        gc.disable()
        _gc_held = True


def start_up_done() -> None:
    """End of start-up (numba and numpy imported): in the console-script process only, turn the
    garbage collector back on, with the start-up objects frozen out of its scans.

    Start-up creates ~150,000 long-lived objects (numba's typing registries above all) and next
    to no garbage; with the collector on, the ~250 collections it triggers re-scan them again and again
    (full collections included): ~60 ms of every run. Library callers and tests (which invoke
    ``app`` directly) keep their collector settings untouched.
    """
    global _gc_held
    if _gc_held:
        _gc_held = False
        gc.freeze()
        gc.enable()


def keep_until_exit(result: object) -> None:
    """In the console-script process only, hold ``result`` (a comparison's rows, runs and
    pairing) until the process ends with ``os._exit``, so that its objects are never freed one
    by one (~20 a row: ~2.5 us a row); the output is the same. Library callers and tests (which
    invoke ``app`` directly) hold nothing: their result is freed as usual."""
    if _console_script:
        _kept.append(result)
