"""The file codecs of the ground: the bytes of every dump and tensor file vcompare reads or writes.

Ascend dumps (:mod:`.dumpfile` reads, :mod:`.dumpwrite` writes; :mod:`.dump_proto` the
``DumpData`` messages, :mod:`.dumpwire` the wire-format walk, :mod:`.exactread` exact byte ranges,
:mod:`.ffts` FFTS+ slices), nano dumps (:mod:`.nano`, :mod:`.nano_write`), Opdebug overflow records
(:mod:`.opdebug`), ``.npy`` (:mod:`.npy`), PyTorch ``.pt`` (:mod:`.torch_pt`), zero-copy maps
(:mod:`.fastread`), and the device data types (:mod:`.dtypes`, :mod:`.narrow`).
"""
