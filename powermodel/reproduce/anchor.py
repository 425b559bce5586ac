"""What an anchor is: :class:`Anchor`, the kinds of check (:data:`KINDS`), what anchors share.

The first module of :mod:`powermodel.reproduce`: every anchor module (one a source or domain:
:mod:`~powermodel.reproduce.llama3`, :mod:`~powermodel.reproduce.reliability`,
:mod:`~powermodel.reproduce.node`, :mod:`~powermodel.reproduce.gpu_levers`,
:mod:`~powermodel.reproduce.plant`) returns an :class:`Anchor`; the runner and the report
(:mod:`~powermodel.reproduce.runner`, :mod:`~powermodel.reproduce.report`) read them.
"""

from __future__ import annotations

import dataclasses

import plotly.graph_objects as go

from powermodel.scenario import Scenario

REFERENCE = "llama3-405b-16k-h100"
PREDICTION, CALIBRATION, IDENTITY, FORMULA = "prediction", "calibration", "identity", "formula"
# What each kind of anchor tells, in the order the report shows them
KINDS = {
    PREDICTION: (
        "prediction against a measurement: no coefficient of the model was fitted to the measured "
        "figure, so these test the model"
    ),
    CALIBRATION: (
        "a coefficient of the model was fitted to the figure: these check that the fit still holds"
    ),
    IDENTITY: (
        "the model is given the source's own figure and compared with what the source computed "
        "from it: these check the model's arithmetic, not the model"
    ),
    FORMULA: (
        "the simulation against a closed-form result, no measurement: these check the simulator "
        "agrees with theory"
    ),
}
SEEDS = 200  # job timelines per Monte Carlo anchor: a few ms each
HOUR = 3600.0


@dataclasses.dataclass(frozen=True)
class Anchor:
    """One published figure against the model.

    ``published`` and ``model`` are in the source's own form (a count, a share, a range);
    ``tolerance`` says the band and why; ``kind`` is one of :data:`KINDS`; ``fitted`` says what
    the coefficients behind the model's figure were fitted on (for a prediction: none on this
    measurement); ``seconds`` is the time the anchor took, set by :func:`run_anchors`.
    """

    name: str
    source: str
    published: str
    model: str
    tolerance: str
    kind: str
    fitted: str
    passed: bool
    figure: go.Figure
    seconds: float = float("nan")

    def __post_init__(self) -> None:
        if self.kind not in KINDS:  # a programming error: the report files anchors by kind
            raise ValueError(f"an anchor's kind is one of {', '.join(KINDS)}, not {self.kind!r}")


def _seeded(scenario: Scenario, seed: int) -> Scenario:
    """The scenario with another seed (a copy: validating it again would cost more than the
    timeline it is for)."""
    return scenario.model_copy(
        update={"simulation": scenario.simulation.model_copy(update={"seed": seed})}
    )
