# SPDX-License-Identifier: MIT
"""Seed views of a results file: which tables it is shown in, the values in each entry, and
the one lookup of a seed's published figures and of live peer figures (a peers run's peer
programs beside the ipcbench cells that do the same work, ipclab/peers.py).

A view is a table the seed itself printed (writers x readers, the ladder, ...), defined with
its suite in ipclab/suites.py. show, report, plot and compare all take their tables from
here, so a results file gets the same tables everywhere.
"""

from dataclasses import dataclass

from ipclab import deterministic, metrics, peers, stats, suites


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
    det = deterministic.is_deterministic(res)
    cells = {c["key"]: c for c in res["cells"]}
    present = {c.get("suite") for c in res["cells"]}
    out = []
    for part in suites.parts(res.get("suite")):
        if part.name not in present:
            continue
        ref = None if det else part.reference()
        for view in part.views:
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


@dataclass
class PeerRow:
    """One figure of one pair in a peers run: the ipcbench cell's values and the peer's."""
    pair: object        # peers.Pair
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
        """95% bootstrap interval of the ratio, each side resampled on its own."""
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
