#!/usr/bin/env python3
"""Parses a trace.json with Python's json module and checks its structure:
Chrome Trace Event format, a named track per core and the host, slices with
ts/dur >= 0, every sub-kernel of the profiled super kernel present on some
core, waits and eager blocks as their own slices.

usage: check_trace.py DIR [SUBKERNEL ...]"""
import json
import sys


def main():
    directory = sys.argv[1]
    expected = sys.argv[2:]
    with open(f"{directory}/trace.json") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "host" in names.values(), names
    assert "core 0" in names.values(), names
    slices = [e for e in events if e["ph"] == "X"]
    assert slices, "no slices"
    for e in slices:
        for key in ("name", "cat", "ts", "dur", "pid", "tid"):
            assert key in e, (key, e)
        assert e["dur"] >= 0 and e["ts"] >= 0, e
        assert e["tid"] in names, e
    cats = {e["cat"] for e in slices}
    for cat in ("subkernel", "superkernel", "launch", "eager"):
        assert cat in cats, (cat, cats)
    subkernels = {e["name"] for e in slices if e["cat"] == "subkernel"}
    for name in expected:
        assert name in subkernels, (name, subkernels)
    with open(f"{directory}/op_statistic.csv") as f:
        header = f.readline().strip()
    assert header == "OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)", header
    print(f"trace ok: {len(slices)} slices on {len(names)} tracks")


if __name__ == "__main__":
    main()
