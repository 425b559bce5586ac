"""Pure numeric models: numpy in, numpy out; no I/O, no xarray, no globals."""
