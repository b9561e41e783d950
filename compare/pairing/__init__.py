"""Pairing: two runs + rule files -> Pairing(pairs, unmatched_left, unmatched_right)."""
