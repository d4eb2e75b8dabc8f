#!/usr/bin/env python3
"""Percentiles of the graph search's debug timings in a recall-bench log.

    RUST_LOG=recall_retrievers=debug recall-bench ... > bench.log 2>&1
    python3 scripts/stage_times.py bench.log

For each search type the bench measured, takes the debug events logged by
its measured queries: those after the warm-up ("caches live ... after a
second query") and before the type's summary line ("recall TYPE ...
(N queries)"). For each event (`brute_force_triplet_search`, `pruned
projection`, `winners read`, ...) it prints p50, p95 and max of every
numeric field. ANSI colours are ignored.
"""
import collections
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
EVENT = re.compile(r"^\S+\s+DEBUG\s+(?:\S+:\s+)*?(\S+::\S+):\s+(.*)$")
FIELD = re.compile(r"(\w+)=(-?[0-9.]+(?:e-?[0-9]+)?)\b")
SUMMARY = re.compile(r"^recall (.+?) top_k=")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round((len(ordered) - 1) * p))]


def split_event(rest):
    """The message (the text before the first `field=`) and the numeric fields."""
    first = FIELD.search(rest)
    message = (rest[: first.start()] if first else rest).strip()
    return message, [(k, float(v)) for k, v in FIELD.findall(rest)]


def no_events():
    """Values by event message, then by field name."""
    return collections.defaultdict(lambda: collections.defaultdict(list))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    measuring, events = False, no_events()
    with open(sys.argv[1], errors="replace") as log:
        for raw in log:
            line = ANSI.sub("", raw.rstrip("\n"))
            if "caches live" in line and "after a second query" in line:
                measuring, events = True, no_events()
                continue
            summary = SUMMARY.match(line)
            if summary:
                if measuring and events:
                    print(line)
                    for message, fields in events.items():
                        for name, values in fields.items():
                            print(f"    {message:32s} {name:28s} p50 {percentile(values, 0.5):9.2f}  "
                                  f"p95 {percentile(values, 0.95):9.2f}  max {max(values):9.2f}  (n={len(values)})")
                measuring = False
                continue
            if measuring:
                event = EVENT.match(line)
                if event:
                    message, fields = split_event(event.group(2))
                    for name, value in fields:
                        events[message][name].append(value)


if __name__ == "__main__":
    main()
