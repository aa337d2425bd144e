#!/usr/bin/env python3
"""Timeline of a cuda-ipc run from its RESHARD_CUDA_IPC_TRACE files (PREFIX.<rank>.tsv).

    python3 scripts/ipc_trace.py PREFIX [--last N]
    python3 scripts/ipc_trace.py --handshake PREFIX [PREFIX ...]
    python3 scripts/ipc_trace.py --switches PREFIX

Waits of all ranks are grouped into steps: a step starts with the first wait (or its flush) that
begins after every wait of the previous step has ended (phases are separated by barriers). For each
of the last N steps it prints, per rank and wait, the microseconds from the step's start to each
traced point: flush (begin/end), wait begin, first/last description taken, first/last launch,
copies done, end; '-' where a point did not happen (e.g. a push receiver copies nothing).

--handshake: over every wait that launched copies (a copier's batch) in all PREFIXes, the median of its
handshake, (first launch - begin) + (end - copies done): the host's part of a batch around its copies,
the simulate presets' per-batch latency where the traces are of window-1 runs of plans without
forwarding (each wait then begins as its batch is posted, so it holds no wait for earlier batches nor
for incoming data; docs/performance.md, "Presets"). Also the medians of its three parts, begin -> first
description taken, first taken (or begin) -> first launch, copies done -> end, whose sum stays near the
handshake where a two-phase plan's forwarders wait for their data inside the first two.

--switches: for each step that launched copies, its time, the ranks that launched, the launches seen
(each wait's first and last) and how often the launching rank changes from one to the next in time order:
on one time-sliced GPU (no MPS) each change is a context switch, so this is a lower bound on the step's
switches (a wait's launches between its first and last are not traced) to compare with `simulate`'s
"context switches" lines for the same phase and window.
"""
import argparse
import csv
import glob
import signal
import statistics
import sys

POINTS = ["flush_begin", "flush_end", "begin", "first_take", "last_take", "first_launch", "last_launch",
          "copies_done", "end"]


def load(prefix):
    rows = []
    for path in sorted(glob.glob(prefix + ".*.tsv")):
        with open(path) as f:
            for r in csv.DictReader(f, delimiter="\t"):
                for k in POINTS:
                    r[k] = float(r[k])
                rows.append(r)
    if not rows:
        sys.exit(f"ipc_trace: no {prefix}.*.tsv files")
    return rows


def start_of(r):
    return r["flush_begin"] if r["flush_begin"] > 0 else r["begin"]


def span_of(step):
    """A step's wall time, its first start to its last end (seconds)."""
    return max(r["end"] for r in step) - min(start_of(r) for r in step)


def steps(rows):
    out, end = [], None
    for r in sorted(rows, key=start_of):
        if end is None or start_of(r) > end:
            out.append([])
            end = r["end"]
        out[-1].append(r)
        end = max(end, r["end"])
    return out


def handshake(prefixes):
    batches = [r for p in prefixes for r in load(p) if r["first_launch"] > 0 and r["copies_done"] > 0]
    if not batches:
        sys.exit("ipc_trace: no wait launched copies")
    us = [((r["first_launch"] - r["begin"]) + (r["end"] - r["copies_done"])) * 1e6 for r in batches]
    taken = [max(r["first_take"], r["begin"]) for r in batches]
    parts = [statistics.median([(t - r["begin"]) * 1e6 for r, t in zip(batches, taken)]),
             statistics.median([(r["first_launch"] - t) * 1e6 for r, t in zip(batches, taken)]),
             statistics.median([(r["end"] - r["copies_done"]) * 1e6 for r in batches])]
    tenths = statistics.quantiles(us, n=10) if len(us) > 1 else [us[0]] * 9
    print(f"handshake over {len(us)} copier batches: median {statistics.median(us):.1f} us "
          f"(p10 {tenths[0]:.1f}, p90 {tenths[-1]:.1f}); medians of its parts {parts[0]:.1f} + {parts[1]:.1f} "
          f"+ {parts[2]:.1f} = {sum(parts):.1f} us (begin -> first taken -> first launch; copies done -> end)")


def switches(prefix):
    all_steps = steps(load(prefix))
    print("step  time_ms  launches_seen  rank_changes  launching_ranks")
    for i, st in enumerate(all_steps):
        events = []
        for r in st:
            if r["first_launch"] > 0:
                events.append((r["first_launch"], r["rank"]))
                if r["last_launch"] > r["first_launch"]:
                    events.append((r["last_launch"], r["rank"]))
        if not events:
            continue
        events.sort()
        changes = sum(1 for a, b in zip(events, events[1:]) if a[1] != b[1])
        ranks = ",".join(sorted({e[1] for e in events}, key=int))
        print(f"{i:>4} {span_of(st) * 1e3:8.2f} {len(events):>14} {changes:>13}  {ranks}")


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefix", nargs="+")
    ap.add_argument("--last", type=int, default=4, help="steps to print, from the end (default 4)")
    ap.add_argument("--handshake", action="store_true", help="the median per-batch handshake of all PREFIXes")
    ap.add_argument("--switches", action="store_true", help="per step, the changes of launching rank")
    a = ap.parse_args()
    if a.handshake:
        return handshake(a.prefix)
    if len(a.prefix) > 1:
        sys.exit("ipc_trace: one PREFIX, or several with --handshake")
    a.prefix = a.prefix[0]
    if a.switches:
        return switches(a.prefix)
    all_steps = steps(load(a.prefix))
    print(f"{len(all_steps)} steps; the last {min(a.last, len(all_steps))}, microseconds from each step's start")
    for i, st in enumerate(all_steps[-a.last:]):
        t0 = min(start_of(r) for r in st)
        print(f"\nstep {len(all_steps) - min(a.last, len(all_steps)) + i}: {span_of(st) * 1e6:.0f} us")
        print("rank wait strm  ops launch " + " ".join(f"{p:>12}" for p in POINTS))
        for r in sorted(st, key=lambda r: (int(r["rank"]), int(r["wait"]))):
            cells = [f"{(r[p] - t0) * 1e6:12.0f}" if r[p] > 0 else f"{'-':>12}" for p in POINTS]
            print(f"{r['rank']:>4} {r['wait']:>4} {r['stream']:>4} {r['ops']:>4} {r['launches']:>6} " + " ".join(cells))


if __name__ == "__main__":
    main()
