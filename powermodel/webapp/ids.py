"""Component ids of the dashboard, shared by the layout, callbacks and browser tests."""

SCENARIO_NAME = "scenario-name"
SUMMARY = "summary"
POWER_GRAPH = "power-graph"
