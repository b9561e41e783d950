"""Loaders: a dump folder or file -> Run of OpDump records (metadata now, tensors on demand)."""
