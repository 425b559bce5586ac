"""The engine: one module a stage of the model (docs/model), in import order; each imports only
the modules before it (``tests/test_layers.py`` checks it).

- :mod:`~powermodel.engine.derive`: scenario → :class:`~powermodel.engine.derive.Derived`
  (step time, checkpoint timing, interruption rates), the plant step
- :mod:`~powermodel.engine.series`: the time grid and the series the Dataset holds lazily
- :mod:`~powermodel.engine.facility`: weather → plant → inlet, GPU temperatures, cooling power,
  the electrical chain's losses, storage and reactive power
- :mod:`~powermodel.engine.disturbances`: grid disturbances and ride-through at the connection
- :mod:`~powermodel.engine.timeline`: the job's states and events, seeded streams, replicas,
  overlays
- :mod:`~powermodel.engine.waveform`: per-GPU shape tables, mitigations, drawn steps
- :mod:`~powermodel.engine.flex`: flexibility events' levers and settings
- :mod:`~powermodel.engine.connection`: the IT path, the facility, what the grid sees
- :mod:`~powermodel.engine.preflight`: the memory budget, what can stream, the checks before a run
- :mod:`~powermodel.engine.run`: :class:`~powermodel.engine.run.Run`, rendering the timeline
  onto the grid; the run's totals
- :mod:`~powermodel.engine.fleet`: an inference fleet on a campus
- :mod:`~powermodel.engine.campus`: several workloads and halls at one connection
- :mod:`~powermodel.engine.sensor_views`: a profile's variables as sensor chains report them

:func:`powermodel.simulate.simulate` is the driver that runs them in order.
"""

# The stages in import order: the list above, which tests/test_layers.py holds each module's
# imports to and the docs' architecture page shows
STAGES = (
    "derive",
    "series",
    "facility",
    "disturbances",
    "timeline",
    "waveform",
    "flex",
    "connection",
    "preflight",
    "run",
    "fleet",
    "campus",
    "sensor_views",
)
