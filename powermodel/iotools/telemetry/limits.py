"""The bounds every telemetry file is held to: its size and rows before it is parsed, its
channels, one node's GPUs, the readings a GPU or a meter can give, the clock jumps repaired and
the cells :func:`~powermodel.iotools.telemetry.to_grid` may fill.

Every reader and check reads them here, as ``limits.NAME`` when it runs, so one bound lowered
(a deployment's, or a test's ``monkeypatch.setattr(limits, ...)``) holds at every entry point.
"""

# Bounds checked before any parsing. Parsing holds the text, its Arrow strings and the numbers:
# about four times the file, so 4 GiB at the size bound.
MAX_BYTES = 1 << 30  # [bytes] ~15 M nvidia-smi lines of ~70 B: a day of an 8-GPU node at 50 ms
# Samples (rows of the tidy frame, ~50 B each): the size bound's lines, with room for meters'
# wide rows (one row, several samples).
MAX_SAMPLES = 20_000_000
# Channels: 512 nodes of 8 GPUs, more than a fit needs to see every state; larger clusters are
# read a sample of nodes at a time. Checked on the header or on the first lines' labels.
MAX_CHANNELS = 4096
# Cells of to_grid (channels x bins, float64): 800 MB.
MAX_GRID = 100_000_000
# One nvidia-smi lists one node's GPUs; 64 bounds the search for GPUs per poll in a log
# without ``index`` [A] (8 in an HGX node, 4 in a GB200 compute tray [S, nvidia_blackwell]).
MAX_NODE_GPUS = 64
# GPUs behind one meter channel: a whole hall's feeder (the bound powermodel.fit's
# MAX_METER_GPUS holds too) [A]
MAX_CHANNEL_GPUS = 100_000
# [W] per GPU: seven times the largest board power, 1,400 W of a B300
# [S, nvidia_blackwell]; above it a reading is a unit mix-up (kW read as W) [A].
MAX_GPU_POWER = 10e3
# [W] per meter channel: a whole hall's feeder, 100,000 GPUs (the most the fit puts behind one
# channel) at MAX_GPU_POWER each; above it a reading is a unit mix-up (MW read as kW) [A].
MAX_METER_POWER = 1e9
# Backward steps of a channel's time repaired as clock jumps (NTP); more is a shuffled file.
MAX_JUMPS = 10
LISTED = 8  # channels (or restarts) named one by one in the warnings
