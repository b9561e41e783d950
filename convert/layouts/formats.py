"""The one table of plain (framework) layouts: which formats name their axes and which of those
the converters, the engine, single-operator mode and the pairing of dump families treat as plain.

Each set below is named after its use and built from the smaller ones, so that a format added to
the converters reaches every use at once.
"""

from __future__ import annotations

#: 4-D formats whose converters need a 4-D shape; other ranks are only reshaped (§4 step 5).
PLAIN_4D = frozenset({"NCHW", "NHWC", "HWCN"})
#: 5-D (depth) formats with named axes.
PLAIN_5D = frozenset({"NCDHW", "NDHWC", "DHWCN"})
#: Formats whose axes can be transposed into one another.
AXIS_FORMATS = PLAIN_4D | PLAIN_5D
#: Plain layouts (no padding, no device blocking): the golden side's layouts and the targets a
#: device layout is converted to; ``ND`` is plain without named axes.
PLAIN_AXES = AXIS_FORMATS | {"CHWN", "ND"}
#: Plain layouts as dump families record them (MindSpore also writes 2-D ``NC`` / ``CN``).
PLAIN_FAMILY = PLAIN_AXES | {"NC", "CN"}
#: vconvert targets without padding: a converted tensor is cut to the target shape only for these.
PLAIN_TARGETS = PLAIN_AXES | {"DHWNC"}
