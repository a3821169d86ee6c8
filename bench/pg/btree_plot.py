#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draw btree.sh's results and write them into docs/btree.md.

    btree_plot.py DIR [--doc FILE]

Reads DIR/batches.csv, DIR/control.csv, DIR/range.csv and DIR/meta.csv
(written by btree.sh), writes one SVG per measure of batches.csv into DIR
(800x450, one line per key type, against rows inserted), and with --doc
rewrites the block of FILE between <!-- btree:begin --> and <!-- btree:end -->
with the tables and the plots (linked relative to FILE). Standard library
only.
"""
import argparse
import csv
import math
import os
import statistics
import sys
from xml.sax.saxutils import escape

BEGIN = "<!-- btree:begin -->"
END = "<!-- btree:end -->"

# Key types in the order of the tables, with their line colours
# (distinguishable in colour-blind palettes and in grey).
KEYS = [
    ("snowflake", "bigint idmint_next()", "bigint", "#0072b2"),
    ("uuidv7", "uuid idmint_uuidv7()", "uuid", "#009e73"),
    ("uuidv4", "uuid gen_random_uuid()", "uuid", "#d55e00"),
    ("ulid", "text idmint_ulid()", "text", "#cc79a7"),
]
DASH = {"snowflake": "", "uuidv7": "8 4", "uuidv4": "", "ulid": "3 3"}

# The plots: file, title, column, scale, unit of the y axis.
PLOTS = [
    ("insert_ms.svg", "Insert time per batch", "insert_ms", 1.0, "ms"),
    ("index_size.svg", "Primary key index size", "index_bytes", 1 / 2**20, "MiB"),
    ("wal_bytes.svg", "WAL written per batch", "wal_bytes", 1 / 2**20, "MiB"),
    ("buffer_reads.svg", "Shared buffer reads per batch (blocks not in shared_buffers)",
     "shared_read", 1.0, "8 kB blocks"),
    ("buffers_dirtied.svg", "Buffers dirtied per batch (clean pages changed, to be written again)",
     "shared_dirtied", 1.0, "8 kB blocks"),
]

W, H = 800, 450
LEFT, RIGHT, TOP, BOTTOM = 78, 24, 62, 52


def die(msg):
    print("btree_plot.py: " + msg, file=sys.stderr)
    sys.exit(1)


def read_csv(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        die("cannot read %s: %s" % (path, e.strerror))


def nice_step(span, ticks=6):
    """A step of 1, 2, 2.5 or 5 times a power of ten giving about `ticks` ticks."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def fmt_tick(v, step):
    """v with as many decimals as the step needs (2.5 needs one)."""
    digits = 0
    while digits < 6 and abs(step * 10**digits - round(step * 10**digits)) > 1e-9:
        digits += 1
    return "{:,.{}f}".format(v, digits)


def series(batches, column, scale):
    """key -> [(rows, the median over the rounds of column at that batch)]."""
    out = {}
    for key, _, _, _ in KEYS:
        at = {}
        for r in batches:
            if r["key"] == key and r[column] != "":
                at.setdefault(int(r["rows"]), []).append(float(r[column]) * scale)
        if at:
            out[key] = [(n, statistics.median(v)) for n, v in sorted(at.items())]
    return out


def svg_plot(path, title, unit, data):
    xs = [x for pts in data.values() for x, _ in pts]
    ys = [y for pts in data.values() for _, y in pts]
    if not xs:
        die("no data for %s" % path)
    xmax = max(xs)
    xstep = nice_step(xmax / 1e6, 5) * 1e6
    xtop = math.ceil(xmax / xstep) * xstep
    ystep = nice_step(max(ys))
    ytop = max(ystep, math.ceil(max(ys) / ystep) * ystep)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(x):
        return LEFT + x / xtop * pw

    def py(y):
        return TOP + ph - y / ytop * ph

    o = []
    o.append('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
             'font-family="Helvetica, Arial, sans-serif" font-size="13">' % (W, H, W, H))
    o.append('<rect width="100%" height="100%" fill="white"/>')
    o.append('<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>' % (LEFT, escape(title)))
    # grid and y ticks
    y = 0.0
    while y <= ytop + ystep / 2:
        yy = py(y)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>' % (LEFT, yy, W - RIGHT, yy))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (LEFT - 6, yy + 4, fmt_tick(y, ystep)))
        y += ystep
    x = 0.0
    while x <= xtop + xstep / 2:
        xx = px(x)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e4e4e4"/>' % (xx, TOP, xx, TOP + ph))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                 % (xx, TOP + ph + 18, fmt_tick(x / 1e6, xstep / 1e6)))
        x += xstep
    # axes
    o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (LEFT, TOP + ph, W - RIGHT, TOP + ph))
    o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (LEFT, TOP, LEFT, TOP + ph))
    o.append('<text x="%.1f" y="%d" text-anchor="middle">rows inserted (millions)</text>'
             % (LEFT + pw / 2, H - 12))
    o.append('<text transform="translate(18,%.1f) rotate(-90)" text-anchor="middle">%s</text>'
             % (TOP + ph / 2, escape(unit)))
    # lines
    for key, _, _, colour in KEYS:
        if key not in data:
            continue
        pts = " ".join("%.1f,%.1f" % (px(a), py(b)) for a, b in data[key])
        dash = ' stroke-dasharray="%s"' % DASH[key] if DASH[key] else ""
        o.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' % (colour, dash, pts))
    # legend: one row between the title and the plot, clear of the lines
    lx = LEFT
    for key, _, kind, colour in KEYS:
        if key not in data:
            continue
        dash = ' stroke-dasharray="%s"' % DASH[key] if DASH[key] else ""
        o.append('<line x1="%d" y1="42" x2="%d" y2="42" stroke="%s" stroke-width="2.5"%s/>'
                 % (lx, lx + 30, colour, dash))
        o.append('<text x="%d" y="46">%s (%s)</text>' % (lx + 36, key, kind))
        lx += 170
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def mib(b):
    return "{:,.1f}".format(b / 2**20)


def num(v):
    return "{:,.0f}".format(v)


def round_figures(rs, tail):
    """The figures of one key in one round, over its batches."""
    rs.sort(key=lambda r: int(r["batch"]))

    def tot(c):
        return sum(float(r[c]) for r in rs)

    index = int(rs[-1]["index_bytes"])
    return {
        "rows": int(rs[-1]["rows"]),
        "index": index,
        "table": int(rs[-1]["table_bytes"]),
        "insert_s": tot("insert_ms") / 1000,
        "first_ms": sum(float(r["insert_ms"]) for r in rs[:tail]) / tail,
        "last_ms": sum(float(r["insert_ms"]) for r in rs[-tail:]) / tail,
        "wal": tot("wal_bytes"),
        "wal_records": tot("wal_records"),
        "read": tot("shared_read"),
        "written": tot("shared_written"),
        "dirtied": tot("shared_dirtied"),
        # pg_statio counts each new page as a read: those are not reads
        "idx_read": max(0, tot("idx_read") - index // 8192),
        # index pages pinned per row inserted, new pages included
        "idx_visits": (tot("idx_read") + tot("idx_hit")) / int(rs[-1]["rows"]),
    }


def summary(batches, meta):
    """key -> the median over the rounds of each figure, with the lowest
    and highest insert time (insert_lo, insert_hi)."""
    rows = {}
    tail = max(1, int(meta["batches"]) // 5)
    for key, _, _, _ in KEYS:
        per_round = {}
        for r in batches:
            if r["key"] == key:
                per_round.setdefault(r["round"], []).append(r)
        if not per_round:
            continue
        figs = [round_figures(rs, tail) for rs in per_round.values()]
        med = {f: statistics.median(x[f] for x in figs) for f in figs[0]}
        med["insert_lo"] = min(x["insert_s"] for x in figs)
        med["insert_hi"] = max(x["insert_s"] for x in figs)
        rows[key] = med
    return rows, tail


def ratio(a, b):
    return "%.2fx" % (a / b) if b else "-"


def markdown(dirpath, docpath, batches, control, ranges, meta):
    rel = os.path.relpath(dirpath, os.path.dirname(os.path.abspath(docpath)))
    s, tail = summary(batches, meta)
    c, _ = summary(control, meta)
    per = int(meta["batch_rows"])
    nb = int(meta["batches"])
    keys = [k for k in KEYS if k[0] in s]

    def link(name):
        return os.path.join(rel, name)

    L = []
    L.append("<!-- Written by bench/pg/btree.sh (btree_plot.py): edits here are overwritten. -->")
    L.append("")
    L.append("Run of %s: PostgreSQL %s, %s; %s cores (%s); %s rows per table in %s batches "
             "of %s, %s rounds (figures: medians over the rounds); shared_buffers %s (the control: %s), "
             "wal_buffers %s, max_wal_size %s, full_page_writes %s, fsync %s, autovacuum %s; "
             "%s s for the whole run."
             % (meta["date"], meta["postgres"], meta["functions"]
                + (" (layout %s)" % meta["layout"] if meta.get("layout") else ""),
                meta["cores"], meta["cpu"], num(int(meta["rows"])), nb, num(per), meta["rounds"],
                meta["shared_buffers"], meta.get("control_shared_buffers", "-"), meta["wal_buffers"],
                meta["max_wal_size"], meta["full_page_writes"], meta["fsync"], meta["autovacuum"],
                meta["seconds"]))
    L.append("")
    L.append("#### Size and time (shared_buffers %s)" % meta["shared_buffers"])
    L.append("")
    L.append("| key | index at the end | index bytes/row | insert time, %d batches (rounds' range) "
             "| ms/batch, first %d | ms/batch, last %d | last %d against uuidv7 |" % (nb, tail, tail, tail))
    L.append("|---|--:|--:|--:|--:|--:|--:|")
    for key, label, _, _ in keys:
        r = s[key]
        L.append("| %s: %s | %s MiB | %.1f | %.1f s (%.1f - %.1f) | %s | %s | %s |"
                 % (key, label, mib(r["index"]), r["index"] / r["rows"], r["insert_s"],
                    r["insert_lo"], r["insert_hi"],
                    num(r["first_ms"]), num(r["last_ms"]),
                    ratio(r["last_ms"], s["uuidv7"]["last_ms"]) if "uuidv7" in s else "-"))
    L.append("")
    L.append("#### WAL and buffers (shared_buffers %s, all batches)" % meta["shared_buffers"])
    L.append("")
    L.append("| key | WAL | WAL bytes/row | index pages visited/row | shared reads | of them the index's "
             "| buffers dirtied | written by the inserting backend |")
    L.append("|---|--:|--:|--:|--:|--:|--:|--:|")
    for key, _, _, _ in keys:
        r = s[key]
        L.append("| %s | %s MiB | %.0f | %.2f | %s | %s | %s | %s |"
                 % (key, mib(r["wal"]), r["wal"] / r["rows"], r["idx_visits"], num(r["read"]),
                    num(r["idx_read"]), num(r["dirtied"]), num(r["written"])))
    L.append("")
    L.append("Index pages visited: the primary key's buffer accesses (pg_statio_user_indexes, hits "
             "and reads) per row. Shared reads: blocks the INSERTs did not find in shared_buffers (all "
             "came from the OS page cache, which holds every table here). The index's share is from "
             "pg_statio_user_indexes, less the pages the index grew by (it counts a new page as a "
             "read). Buffers dirtied: clean pages the INSERTs changed, each of which must be written "
             "again. Written: buffers the backend wrote itself, new pages included, to make room.")
    L.append("")
    for fname, title, _, _, _ in PLOTS:
        L.append("![%s](%s)" % (title, link(fname)))
        L.append("")
    if c:
        L.append("#### The control: shared_buffers %s" % meta.get("control_shared_buffers", "?"))
        L.append("")
        L.append("| key | index at the end | insert time, %d batches (rounds' range) | ms/batch, last %d "
                 "| last %d against uuidv7 | shared reads | buffers dirtied | insert time at %s against this |"
                 % (nb, tail, tail, meta["shared_buffers"]))
        L.append("|---|--:|--:|--:|--:|--:|--:|--:|")
        for key, _, _, _ in keys:
            if key not in c:
                continue
            r = c[key]
            L.append("| %s | %s MiB | %.1f s (%.1f - %.1f) | %s | %s | %s | %s | %s |"
                     % (key, mib(r["index"]), r["insert_s"], r["insert_lo"], r["insert_hi"],
                        num(r["last_ms"]),
                        ratio(r["last_ms"], c["uuidv7"]["last_ms"]) if "uuidv7" in c else "-",
                        num(r["read"]), num(r["dirtied"]), ratio(s[key]["insert_s"], r["insert_s"])))
        L.append("")
    L.append("#### Finding a time range")
    L.append("")
    L.append("The rows of a time window (from the creation of row %s to that of row %s, to the ms: "
             "about %s rows, %.0f%% of each table) found by their time, "
             "`SELECT count(*), max(payload) FROM t WHERE <range>`, after an index on `created` was "
             "built and the table analyzed. Buffers: shared buffers a warm scan touched (hit + read); "
             "cold: the first run after a restart, its buffers read (from the OS page cache) and "
             "its time; warm: the median time of 5 more."
             % (num(int(meta["window_rows"].split("-")[0])), num(int(meta["window_rows"].split("-")[1]) + 1),
                num(per), 100.0 * per / int(meta["rows"])))
    L.append("")
    L.append("| key | through | that index's size | rows found | plan | buffers | cold: read "
             "| cold ms | warm ms |")
    L.append("|---|---|--:|--:|---|--:|--:|--:|--:|")
    for r in ranges:
        how = "primary key" if r["access"] == "pk" else "index on created"
        L.append("| %s | %s | %s MiB | %s | %s | %s | %s | %s | %s |"
                 % (r["key"], how, mib(int(r["index_bytes"])), num(int(r["rows"])), r["node"],
                    num(int(r["warm_buffers"])), num(int(r["cold_read"])), r["cold_ms"], r["warm_ms"]))
    L.append("")
    L.append("The raw figures: [batches.csv](%s), [control.csv](%s), [range.csv](%s), [meta.csv](%s)."
             % (link("batches.csv"), link("control.csv"), link("range.csv"), link("meta.csv")))
    return "\n".join(L)


def rewrite_doc(docpath, block):
    try:
        with open(docpath) as f:
            text = f.read()
    except OSError as e:
        die("cannot read %s: %s" % (docpath, e.strerror))
    # The markers count only as lines of their own: the text may name them.
    lines = text.split("\n")
    if lines.count(BEGIN) != 1 or lines.count(END) != 1 or lines.index(END) < lines.index(BEGIN):
        die("%s has no block between lines %s and %s to rewrite" % (docpath, BEGIN, END))
    b, e = lines.index(BEGIN), lines.index(END)
    text = "\n".join(lines[: b + 1] + block.split("\n") + lines[e:])
    tmp = docpath + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, docpath)


def main():
    ap = argparse.ArgumentParser(description="Draw btree.sh's results; write them into docs/btree.md.")
    ap.add_argument("dir", help="the directory of batches.csv, range.csv and meta.csv; the SVGs go there")
    ap.add_argument("--doc", help="the Markdown file whose marked block to rewrite")
    a = ap.parse_args()
    batches = read_csv(os.path.join(a.dir, "batches.csv"))
    control = read_csv(os.path.join(a.dir, "control.csv"))
    ranges = read_csv(os.path.join(a.dir, "range.csv"))
    meta = {r["name"]: r["value"] for r in read_csv(os.path.join(a.dir, "meta.csv"))}
    for need in ("rows", "batches", "batch_rows", "rounds", "window_rows"):
        if need not in meta:
            die("meta.csv has no %s" % need)
    for fname, title, column, scale, unit in PLOTS:
        svg_plot(os.path.join(a.dir, fname), title, unit, series(batches, column, scale))
    if a.doc:
        rewrite_doc(a.doc, markdown(a.dir, a.doc, batches, control, ranges, meta))


if __name__ == "__main__":
    main()
