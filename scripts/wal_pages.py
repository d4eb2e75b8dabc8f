#!/usr/bin/env python3
"""Which tables and indexes a running SQLite writer's commits write.

    python3 scripts/wal_pages.py DATA_DIR/recall.db SECONDS

For SECONDS it holds a read snapshot of the store open, so that the WAL
cannot restart and every frame committed meanwhile stays in it; then it
reads the page number of each of those frames and names the B-tree that
owns the page (SQLite's dbstat). Chunks are counted as DocumentChunk
nodes at both ends of the window. Python's sqlite3 only; the writer may be
any process (recall-bench, recall remember, the server). Holding the
snapshot delays checkpoints, so the writer's own rate in the window is not
representative; the pages written per chunk are.
"""
import collections
import os
import sqlite3
import struct
import sys
import time

FRAME_HEADER = 24
WAL_HEADER = 32


def chunks(conn):
    query = "SELECT count(*) FROM graph_nodes WHERE node_type = 'DocumentChunk'"
    return conn.execute(query).fetchone()[0]


def wal_header(path):
    """The WAL's page size and its salts (which mark the frames of this WAL)."""
    with open(path, "rb") as f:
        head = f.read(WAL_HEADER)
    return struct.unpack(">I", head[8:12])[0], head[16:24]


def wal_frames(path, start):
    """(page number, commit marker) of each valid frame from byte `start`."""
    page_size, salts = wal_header(path)
    with open(path, "rb") as f:
        f.seek(start)
        out = []
        while True:
            header = f.read(FRAME_HEADER)
            if len(header) < FRAME_HEADER or header[8:16] != salts:
                return out
            out.append(struct.unpack(">II", header[:8]))
            f.seek(page_size, 1)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    db, seconds = sys.argv[1], float(sys.argv[2])
    wal = db + "-wal"
    hold = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    hold.execute("BEGIN")
    before = chunks(hold)
    frame = FRAME_HEADER + wal_header(wal)[0]
    start = WAL_HEADER + (os.path.getsize(wal) - WAL_HEADER) // frame * frame
    began = time.time()
    time.sleep(seconds)
    window = wal_frames(wal, start)
    elapsed = time.time() - began
    hold.execute("COMMIT")
    hold.close()

    fresh = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    after = chunks(fresh)
    owner = dict((pageno, name) for name, pageno in fresh.execute("SELECT name, pageno FROM dbstat"))
    fresh.close()

    made = max(after - before, 1)
    commits = sum(1 for _, commit in window if commit)
    frames = collections.Counter(owner.get(page, "?") for page, _ in window)
    pages = collections.defaultdict(set)
    for page, _ in window:
        pages[owner.get(page, "?")].add(page)
    print(f"{elapsed:.0f} s: {after - before} chunks ({before} to {after}), {len(window)} frames, "
          f"{commits} commits, {len(window) / made:.1f} frames per chunk")
    for name, n in frames.most_common():
        print(f"  {name:36s} {n:8d} frames {n / made:6.1f} per chunk {len(pages[name]):8d} distinct pages")


if __name__ == "__main__":
    main()
