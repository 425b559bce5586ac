"""Utility rules as measurement chains, and checking a profile against them.

A rule is data (``presets/rules.toml`` or a user TOML file): signal, averaging, band, window,
statistic, direction, limit and reference. :func:`check` measures a Dataset (simulated, or a
trace read by :func:`read_trace`) the way the rule says, reports pass or fail with the worst value
and when, and attributes each violation to what caused it from the job's state.

The package, in the order a check runs: :mod:`~powermodel.rules.rule` (a rule and where rules
come from), :mod:`~powermodel.rules.measurement` (a rule's statistic, the causes of its
violations, its verdict), :mod:`~powermodel.rules.median` (the running median a checkpoint is
held at), :mod:`~powermodel.rules.streamed` (the check over a run's pieces, and of a whole
profile in blocks) and :mod:`~powermodel.rules.report` (the verdicts as tables). This face
gathers their public names.
"""

from __future__ import annotations

from powermodel.iotools.trace import read_trace  # rules.read_trace, as before
from powermodel.rules.measurement import CAUSES, Refusal, RuleResult, measure
from powermodel.rules.report import (
    by_cause,
    check_violations_path,
    summary,
    violations_table,
    write_violations,
)
from powermodel.rules.rule import (
    Rule,
    RuleError,
    describe,
    load_rules,
    rule_names,
    shipped,
    site_rules,
)
from powermodel.rules.streamed import StreamedCheck, check, check_each

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = [
    "by_cause",
    "CAUSES",
    "check",
    "check_each",
    "check_violations_path",
    "describe",
    "load_rules",
    "measure",
    "site_rules",
    "read_trace",
    "Refusal",
    "Rule",
    "rule_names",
    "RuleError",
    "RuleResult",
    "shipped",
    "StreamedCheck",
    "summary",
    "violations_table",
    "write_violations",
]
