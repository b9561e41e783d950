"""Layout and dump-file conversion for vcompare (imports nothing heavy at start-up)."""
