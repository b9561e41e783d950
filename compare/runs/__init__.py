"""Comparison runs: what one command does, from two folders to rows.

- :mod:`compare.runs.loading`: both sides loaded and paired (model choice, rules, pairing);
- :mod:`compare.runs.network`: one loaded pairing compared (rows, notes, unpaired tensors);
- :mod:`compare.runs.each`: the (rank, iteration, graph) parts of a dump tree compared in turn;
- :mod:`compare.runs.folders`: :func:`~compare.runs.folders.run_network`, two folders in, a result out;
- :mod:`compare.runs.batch`: every model of a dump root against its rule file (``-f DIR``).

:mod:`compare.api` stands on these: the gated public API (``compare_network``, ``regate``).
"""
