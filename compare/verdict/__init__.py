"""The verdict: does a compared run pass?

- :mod:`.gates`: bounds (``--gate "CosineSimilarity>=0.99"``) checked against rows, the
  ``Verdict`` and its exit code;
- :mod:`.policy`: a policy -- bounds by operator, dtype and row kind, waivers, strictness;
- :mod:`.policy_file`: the ``gates.toml`` file a policy is read from (docs/policy.md).
"""
