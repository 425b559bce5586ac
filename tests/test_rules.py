"""Utility rules as measurement chains (powermodel.rules): which events violate which rule
(issue 4, acceptance 1), measured traces and user rule files."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import QUIET, REFERENCE

from powermodel import load_scenario, simulate
from powermodel.errors import PowerModelError
from powermodel.rules import RuleError, check, load_rules, measure, read_trace


@pytest.fixture(scope="module")
def fine_day():
    """A day of the reference at 100 ms, failures three times as often (more events per run)."""
    sc = load_scenario(
        REFERENCE,
        {"simulation.duration": "1d", "simulation.dt": "0.1s", "reliability.rate_scale": 3.0},
    )
    return sc, simulate(sc)


def test_a_crash_moves_about_11_mw_in_the_ercot_window(fine_day):
    # Issue 4's worked expectation: a crash of the whole job moves about 11 MW at the connection
    # within seconds. Measured as ERCOT measures it (0.1-55 Hz, max - min in 5 s) at 100 ms:
    # the size depends on the phase the crash hits (compute peak or communication trough).
    _, ds = fine_day
    rule = load_rules("ercot-5s")[0]
    value = measure(ds["grid_power"].values, rule, 0.1)
    start = (ds["event_time"].values - ds["time"].values[0]) / np.timedelta64(100, "ms")
    crashes = [
        value[int(i) : int(i) + 80].max()
        for i, kind in zip(start, ds["event_kind"].values, strict=True)
        if kind == "unexpected"
    ]
    assert len(crashes) >= 15
    assert 9.5 <= np.median(crashes) <= 11.5
    assert np.max(crashes) > 10.0  # so crashes do violate ERCOT's 10 MW


def test_check_attributes_violations_to_their_causes(fine_day):
    sc, ds = fine_day
    results = check(ds, load_rules("ercot-5s,nprr1191,ieso"))
    verdict = {r.rule.name: r for r in results}
    ercot = verdict["ercot-5s"]
    assert not ercot.passed and ercot.by_cause["failure"] >= 5
    # 100 ms resolves the band up to half its Nyquist frequency, 2.5 Hz, not ERCOT's 55 Hz:
    # the verdict says so (a pass would not be proven above it; a failure stands)
    assert ercot.resolved_to == pytest.approx(2.5)
    # NPRR1191's downward limit is the lesser of 20 MW/min and 5 % of the registered demand
    # (the design-day facility peak, model output: 24.93 MW, 24.99 MW before the supplies'
    # measured AC/DC [D, mlperf_training_v4_smc]: 1.25 MW/min); every crash breaks it
    down = verdict["nprr1191-down"]
    assert down.limit == pytest.approx(0.05 * ds.attrs["registered_demand"])
    assert ds.attrs["registered_demand"] == pytest.approx(24.93, abs=0.05)
    n_crashes = int((ds["event_kind"].values == "unexpected").sum())
    assert down.by_cause["failure"] == pytest.approx(n_crashes, abs=2)
    # IESO's 20 MW/min on the 1-min average is not reached: a crash moves the minute's average
    # by its 8 MW drop plus, a minute later, the 3.7 MW of the nodes going idle
    assert verdict["ieso-1min"].passed
    assert 8.0 < verdict["ieso-1min"].worst < 20.0
    # every violation has a cause from the job's state
    for r in results:
        assert set(r.by_cause) <= {
            "failure",
            "restart",
            "maintenance",
            "checkpoint",
            "iteration swing",
            "weather",
        }


def test_checkpoints_are_blamed_only_for_what_they_cause():
    # NPRR1191's upward 2 % (0.5 MW/min on the 1-min average) is broken every few minutes when
    # blocking checkpoints stall the job, and never by the iteration swing alone (the average
    # of a 6 s swing over a minute hardly moves): the same run without checkpoints shows it.
    over = {**QUIET, "simulation.duration": "6h"}
    rule = load_rules("nprr1191-up")
    with_stalls = check(
        simulate(load_scenario(REFERENCE, {**over, "checkpoint.interval": "4min"})), rule
    )[0]
    assert with_stalls.by_cause["checkpoint"] > 50
    assert "iteration swing" not in with_stalls.by_cause
    without = check(simulate(load_scenario(REFERENCE, over)), rule)[0]
    assert set(without.by_cause) <= {"restart"}  # the first start's ramp only


def test_check_reads_a_measured_trace(tmp_path):
    t = np.arange(0, 600.0, 1.0)
    p = 50.0 + 12.0 * (t >= 300)  # a 12 MW step up
    path = tmp_path / "trace.csv"
    path.write_text(
        "time,P [MW]\n"
        + "\n".join(
            f"2025-01-01T00:{int(s) // 60:02d}:{int(s) % 60:02d}Z,{v}"
            for s, v in zip(t, p, strict=True)
        )
    )
    trace = read_trace(path)
    (result,) = check(trace, load_rules("ercot-5s"))
    assert not result.passed and result.worst == pytest.approx(12.0, rel=0.01)
    assert result.by_cause == {"unknown": 1}
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "time,P [MW]\n2025-01-01T00:00:00Z,1\n2025-01-01T00:00:01Z,x\n2025-01-01T00:00:02Z,2\n"
    )
    with pytest.raises(PowerModelError, match="line 3"):
        read_trace(bad)
    # ten seconds cannot say anything about a rule on two 1-min averages: refused, not passed
    with pytest.raises(RuleError, match="longer than the profile"):
        check(trace.isel(time=slice(0, 10)), load_rules("ieso-1min"))


def test_user_rules_from_toml_and_their_errors(tmp_path):
    mine = tmp_path / "mine.toml"
    mine.write_text(
        '[my-utility]\ntitle = "15 MW a minute"\nsource = "our interconnection agreement"\n'
        'status = "in force"\nwindow = "1min"\nstatistic = "rate"\nlimit = 15.0\n'
    )
    (rule,) = load_rules(str(mine))
    assert rule.name == "my-utility" and rule.unit == "MW/min"
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[bad]\ntitle = "x"\nsource = "x"\nstatus = "draft"\nwindow = "1min"\n'
        'statistic = "rate"\nlimit = 1.0\n'
    )
    with pytest.raises(RuleError, match="rule bad: status"):
        load_rules(str(bad))
    nolimit = tmp_path / "nolimit.toml"
    nolimit.write_text(
        '[n]\ntitle = "x"\nsource = "x"\nstatus = "quoted"\nwindow = "1min"\nstatistic = "rate"\n'
    )
    with pytest.raises(RuleError, match="needs limit"):
        load_rules(str(nolimit))
    with pytest.raises(RuleError, match="unknown rule 'ercot'"):
        load_rules("ercot")


def test_a_shipped_name_is_the_shipped_rule_whatever_files_lie_in_the_working_folder(
    tmp_path, monkeypatch
):
    # issue 26, found by the forged round under strace: the dashboard's rules, checked as
    # shipped names, were then looked up as files in the server's folder, so a file named
    # "ercot-5s" there was read as the rule. Every shipped rule and group name, each beside a
    # file of its name holding another rule; a path to such a file still reads it
    from powermodel.rules import rule_names

    monkeypatch.chdir(tmp_path)
    other = '[x]\ntitle = "x"\nsource = "x"\nstatus = "quoted"\nwindow = "1min"\n'
    for name in rule_names():
        (tmp_path / name).write_text(other + 'statistic = "rate"\nlimit = 1.0\n')
    for name in rule_names():
        assert "x" not in [r.name for r in load_rules(name)], name
    (rule,) = load_rules(f"./{rule_names()[0]}")
    assert rule.name == "x"


def test_rules_judged_chain_by_chain_keep_their_order_and_their_verdicts(fine_day):
    # The rules of one chain are judged together and their statistics then dropped: the
    # verdicts must be each rule's alone (the reference: checking it by itself), in the order
    # given, and a refusal the first in that order. At 100 ms ieso-sso and lipa-high (5-55 Hz)
    # cannot be judged (a 100-ms profile resolves up to 2.5 Hz).
    from powermodel.rules import check_each

    _, ds = fine_day
    names = ["ieso-15s", "ercot-5s", "ieso-sso", "nprr1191-up", "lipa-low", "atc-5s"]
    names += ["nprr1191-down", "lipa-high", "ieso-1min"]
    rules = load_rules(names)
    results, refused = check_each(ds, rules)
    assert [r.rule.name for r in results] == [
        n for n in names if n not in ("ieso-sso", "lipa-high")
    ]
    assert [r.rule.name for r in refused] == ["ieso-sso", "lipa-high"]
    for result in results:
        alone = check(ds, [result.rule])[0]
        assert (alone.worst, alone.worst_time) == (result.worst, result.worst_time)
        assert alone.violations.equals(result.violations)
        assert alone.seconds_by_cause == result.seconds_by_cause
    with pytest.raises(RuleError, match="ieso-sso"):
        check(ds, rules)


def test_a_signal_with_no_reading_gets_no_verdict_from_any_rule():
    # issue 26, item 5: a NaN never reaches a verdict. A profile whose signal is missing
    # throughout (every reading NaN) passed every rule with worst = nan, since NaN compares over
    # no limit; each shipped rule the profile supports now refuses it, in check_each and check
    from powermodel.rules import check_each, rule_names

    sc = load_scenario(REFERENCE, {"simulation.duration": "1h", "simulation.dt": "0.1s"})
    ds = simulate(sc)
    rules = load_rules(rule_names())
    supported = {r.rule.name for r in check_each(ds, rules)[0]}
    for name in ("grid_power", "grid_reactive_power"):
        ds[name][:] = np.nan
    judged, refused = check_each(ds, rules)
    assert judged == [] and len(supported) >= 5
    missing = {r.rule.name for r in refused if r.reason.endswith("so the profile has no verdict")}
    assert missing == supported
    with pytest.raises(RuleError, match="every reading of grid_power is missing"):
        check(ds, load_rules("ercot-5s"))
