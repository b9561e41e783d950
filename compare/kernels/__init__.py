"""Kernels: arrays in, floats out. No I/O, no logging, no formatting."""
