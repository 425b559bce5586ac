import sys, time, warnings, os; sys.path.insert(0, "tests")
import numpy as np
from synthetic_telemetry import write
from powermodel.iotools import read_telemetry
from test_telemetry import _frame
f = _frame(polls=50_000, gpus=8, skew_ms=0)
t0 = time.perf_counter(); p = write(f, "/tmp/perf_exp.txt", "dcgm-exporter", timestamps=True); t1 = time.perf_counter()
warnings.simplefilter("ignore")
d, m = read_telemetry(p); t2 = time.perf_counter()
print(len(d), f"{os.path.getsize(p)/1e6:.0f} MB write {t1-t0:.1f}s read {t2-t1:.1f}s")
