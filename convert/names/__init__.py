"""Every file-name grammar of the dumps vcompare reads, and the hashed-name lookup.

- :mod:`convert.names.ascend`: offline (NPU) dump names and :func:`~convert.names.ascend.classify_name`;
- :mod:`convert.names.golden`: Caffe / TF ``.npy`` and DumpData ``.pb`` / ``.quant`` golden names;
- :mod:`convert.names.hashed`: hashed names, the one ``mapping.csv`` reader and the one lookup;
- :mod:`convert.names.mindspore`: MindSpore ``.bin`` / ``.npy`` dump names, overflow records, type
  and format names;
- :mod:`convert.names.msprobe`: msprobe ``dump.json`` data names and dtypes;
- :mod:`convert.names.keys`: the name-normalisation ladder.

Pure functions of strings (and ``mapping.csv``): vconvert and every vcompare loader share them.
"""
