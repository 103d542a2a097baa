#!/usr/bin/env python3
"""Pages each B-tree of a SQLite database changed between two copies.

usage: sqlite_pagediff.py BEFORE.db AFTER.db BLOCKS
Maps every page of AFTER to its table or index (dbstat) and compares it with
the same page of BEFORE: a page that differs (or is new) was written by the
run between them. Run one batch (BENCH_BLOCKS = BENCH_BATCH) to get the pages
one commit writes to the WAL (and the checkpoint again to the database).
"""
import hashlib, subprocess, sys, collections
before, after, blocks = sys.argv[1], sys.argv[2], int(sys.argv[3])
def q(db, sql):
    out = subprocess.run(["sqlite3", "-separator", "|", f"file:{db}?mode=ro", sql], capture_output=True, text=True, check=True).stdout
    return [l.split("|") for l in out.splitlines() if l]
ps = int(q(after, "PRAGMA page_size")[0][0])
owner = {int(p): n for p, n in q(after, "SELECT pageno, name FROM dbstat")}
total = collections.Counter(owner.values())
leaves = collections.Counter(n for n, t in q(after, "SELECT name, pagetype FROM dbstat") if t == "leaf")
changed = collections.Counter()
with open(before, "rb") as fb, open(after, "rb") as fa:
    pno = 0
    while True:
        a = fa.read(ps)
        if not a:
            break
        pno += 1
        b = fb.read(ps)
        if a != b:
            changed[owner.get(pno, "(freelist or other)")] += 1
allc = sum(changed.values())
print(f"page size {ps}, {blocks} blocks: {allc} pages changed = {allc*ps/blocks/1024:.1f} KB/block")
print(f"{'b-tree':40s} {'pages':>9s} {'leaves':>9s} {'changed':>8s} {'KB/block':>9s} {'share':>6s}")
for name, c in changed.most_common():
    print(f"{name:40s} {total[name]:9d} {leaves[name]:9d} {c:8d} {c*ps/blocks/1024:9.1f} {100*c/allc:5.1f}%")
