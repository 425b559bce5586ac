"""The command line's exit codes and the files ``ride-through --model`` names: what the entry
point reads without importing any command (issue 30: ``powermodel --version`` imports no numeric
stack)."""

VIOLATED = 3
NO_RUN = 3  # a sweep none of whose runs ran
# ride-through --model PREFIX writes PREFIX.dyr (PSS/E) and PREFIX.aux (PowerWorld)
MODEL_SUFFIXES = (".dyr", ".aux")
INTERNAL = 70  # EX_SOFTWARE of sysexits.h
BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a command whose reader went away
