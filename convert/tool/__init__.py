"""vconvert's operations, one module each; :mod:`convert.cli` is the thin command line over them.

- :mod:`~convert.tool.convert_dump` -- dump files -> ``.npy`` / ``.bin`` (``dump``), one file's
  tensors to a layout (``shape``);
- :mod:`~convert.tool.data_conversion` -- golden ``.npy`` <-> dump files (``data``);
- :mod:`~convert.tool.to_text` -- tensors as text (``txt``);
- :mod:`~convert.tool.prototxt` -- a Caffe prototxt without in-place layers (``inplace``);
- :mod:`~convert.tool.rename_npy` -- golden ``.npy`` names (``rename-npy``);
- :mod:`~convert.tool.batch` (inputs, worker pool, report) and :mod:`~convert.tool.naming` (the
  names of the files written), shared by the operations.

Nothing outside vconvert imports this package: it stands on the codecs and layouts of
:mod:`convert`, never the other way round.
"""

from __future__ import annotations
