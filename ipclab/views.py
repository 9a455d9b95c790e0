# SPDX-License-Identifier: MIT
"""Seed views of a results file: which tables it is shown in, the values in each entry, and
the one lookup of a seed's published figures and of where they were published, and of live
peer figures (a peers run's peer programs beside the ipcbench cells that do the same work,
ipclab/peers.py).

A view is a table the seed itself printed (writers x readers, the ladder, ...), defined with
its suite in ipclab/suites.py. show, report, plot and compare all take their tables from
here, so a results file gets the same tables everywhere.
"""

import math
from dataclasses import dataclass

from ipclab import deterministic, metrics, peers, results, stats, suites
from ipclab.mode import Mode


@dataclass
class ShownView:
    part: object        # the suites.Suite whose view it is
    view: object        # suites.View, restated for the file's clock
    ref: object         # the seed's reference data, or None (no seed, or not comparable)


def shown(res):
    """[ShownView] of a results file, in suite order: its suite's views for its mode; under
    a deterministic clock restated in instructions and without published figures, which are
    times and rates of real machines."""
    mode = res.get("mode", "quick")
    det = Mode.of(res).deterministic
    cells = {c["key"]: c for c in res["cells"]}
    present = {c.get("suite") for c in res["cells"]}
    out = []
    for part in suites.members(res.get("suite")):
        if part.name not in present:
            continue
        ref = None if det else part.reference()
        for view in part.views_for(results.catalog(res)):
            if mode not in view.modes:
                continue
            if det:
                view = deterministic.view_for(view, cells)
                if view is None:
                    continue
            out.append(ShownView(part, view, ref))
    return out


def covered(res):
    """Names of the suites whose cells the views show."""
    return {sv.part.name for sv in shown(res)}


def values(res, view):
    """{(row, col): (values, cell)} of one view in one results file, scaled for display."""
    cells = {c["key"]: c for c in res["cells"]}
    out = {}
    for label, entries in view.rows:
        for col, (key, path) in zip(view.columns, entries):
            c = cells.get(key)
            if c is not None:
                out[(label, col)] = ([v * view.scale for v in metrics.metric_values(c, path)], c)
    return out


def published(ref, view, row, col):
    """The seed's published figure(s) for one entry: a number, a list (before -> after), or
    None."""
    k = view.ref_cells.get((row, col))
    if not ref or not view.ref_key or not k:
        return None
    v = ref.get("figures", {}).get(view.ref_key, {}).get("cells", {}).get(k)
    return v.get("value") if isinstance(v, dict) else v


def citation(ref):
    """Where a seed's figures were published, as one line a reader can follow: who, what,
    which list, when, the commit or the URL, where in it, and what the copy lacks."""
    src = ref.get("source") or {}
    what = src.get("subject") or src.get("title")
    pieces = [src.get("author"), f'"{what}"' if what else None,
             f"{src['list']} list" if src.get("list") else None, src.get("date"),
             f"Linux commit {src['commit']}" if src.get("commit") else None, src.get("url")]
    text = ", ".join(p for p in pieces if p)
    if src.get("where"):
        text += f" ({src['where']})"
    if src.get("note"):
        text += f"; {src['note']}"
    return text


def _number(x):
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def _summary_row(suite, view, row, col, key, path, unit, cell, xs, measured_in):
    s = stats.summarize(xs)
    return {"suite": suite, "view": view, "row": row, "column": col, "key": key, "path": path,
            "unit": unit, "status": cell.get("status") if cell else None, "n": s.n,
            "median": _number(s.median), "iqr": _number(s.iqr), "cv": _number(s.cv),
            # Under icount: how far the median could be off, the ± the tables print.
            "spread": _number(deterministic.spread(xs)) if measured_in.deterministic and xs
            else None,
            "published": None, "published_as": None, "peer": None}


def record(res, peers_run=None):
    """What `show` prints, as data: one row per entry of each seed view (the median and its
    spread, in the view's unit, with the published figure and, given a peers run, the live
    peer's median beside it), then one row per cell and metric of the cells no view shows.
    Unrounded; None where no number is."""
    measured_in = Mode.of(res)
    prows = peer_rows(peers_run) if peers_run else []
    rows = []
    views_shown = shown(res)
    for sv in views_shown:
        view, ref = sv.view, sv.ref
        vals = values(res, view)
        for label, entries in view.rows:
            for col, (key, path) in zip(view.columns, entries):
                xs, cell = vals.get((label, col), ([], None))
                row = _summary_row(sv.part.name, view.id, label, col, key, path, view.unit,
                                   cell, xs, measured_in)
                pub = published(ref, view, label, col)
                if pub is not None:
                    row["published"], row["published_as"] = pub, ref.get("columns")
                live = live_peer(prows, sv.part, view, label, col)
                row["peer"] = _number(stats.median(live.peer)) if live else None
                rows.append(row)
    covered_suites = {sv.part.name for sv in views_shown}
    for c in res["cells"]:
        if c.get("suite") in covered_suites:
            continue
        paths = metrics.metrics_for(c)
        if not paths:
            rows.append(_summary_row(c.get("suite"), None, None, None, c["key"], None, "", c,
                                     [], measured_in))
        for path in paths:
            unit, _ = metrics.metric_info(c, path)
            rows.append(_summary_row(c.get("suite"), None, None, None, c["key"], path, unit,
                                     c, metrics.metric_values(c, path), measured_in))
    return {"id": res.get("id"), "suite": res.get("suite"), "mode": res.get("mode"),
            "clock": measured_in.clock, "rows": rows,
            "pairs": [pair_record(r) for r in peer_rows(res)]}


def pair_record(row):
    """One PeerRow as data: both cells, each side's median, CV and n, ours/peer with its
    95% interval, and the note of what still differs."""
    ours, peer = stats.summarize(row.ours), stats.summarize(row.peer)
    lo, hi = row.ratio_ci
    return {"pair": row.pair.name, "figure": row.measure.label,
            "ours_key": row.ours_cell["key"], "peer_key": row.peer_cell["key"],
            "peer_command": row.pair.command,
            "ours_status": row.ours_cell.get("status"), "peer_status": row.peer_cell.get("status"),
            "ours_median": _number(ours.median), "ours_cv": _number(ours.cv), "ours_n": ours.n,
            "peer_median": _number(peer.median), "peer_cv": _number(peer.cv), "peer_n": peer.n,
            "ratio": _number(row.ratio), "ci": [_number(lo), _number(hi)],
            "n": min(ours.n, peer.n), "note": row.pair.differs}


@dataclass
class PeerRow:
    """One figure of one pair in a peers run: the ipcbench cell's values and the peer's."""
    pair: object        # peers.PeerCommand
    measure: object     # peers.Measure
    ours: list
    peer: list
    ours_cell: dict
    peer_cell: dict

    @property
    def ratio(self):
        """ours / peer, of the medians: the agreement of the two programs."""
        if not self.ours or not self.peer:
            return float("nan")
        p = stats.median(self.peer)
        return stats.median(self.ours) / p if p else float("nan")

    @property
    def ratio_ci(self):
        """95% bootstrap interval of the ratio, each side resampled on its own; none from
        fewer than MIN_REPS values a side, where the percentile bootstrap of a median is
        too narrow to stand for 95%."""
        if min(len(self.peer), len(self.ours)) < stats.MIN_REPS:
            return (float("nan"), float("nan"))
        return stats.bootstrap_ratio_ci(self.peer, self.ours)


def peer_rows(res):
    """[PeerRow] of a results file's pairs (a peers run), in the pairs' order; [] when it
    holds no peer cell."""
    cells = {c["key"]: c for c in res.get("cells", [])}
    out = []
    for pair in peers.PAIRS:
        pc, oc = cells.get(pair.key), cells.get(pair.ours[0])
        if pc is None or oc is None:
            continue
        for m in pair.measures:
            out.append(PeerRow(pair, m, metrics.metric_values(oc, m.ours),
                               metrics.metric_values(pc, m.peer), oc, pc))
    return out


def live_peer(rows, part, view, row, col):
    """The PeerRow of peer_rows() that stands beside one seed table entry, or None."""
    for r in rows:
        if r.measure.seed == (part.name, view.id, row, col) and r.peer:
            return r
    return None
