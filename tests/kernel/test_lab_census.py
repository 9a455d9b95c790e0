# SPDX-License-Identifier: MIT
"""Kernel tier, the census: one deterministic boot of the base's plain variant with the wakeup
counters, two workloads whose answer is known. A reader asleep on an empty pipe before every
one-byte write is found asleep by every write's wakeup ("write-rd"); a process that writes
into its own pipe and reads the byte back is never found asleep there. The timeout bounds
the boot, it is not a measurement.

Part of `make test` (`make test-census` runs it alone). Its two answers hold on the
production config's census (docs/lab.md: 224/224 and 24/1024, the harness's own writes
included) and on the tiny config's (passed 2026-11-27, 72 s; with the counter's sleeper test
inverted in lab-wakeup-counters.patch both answers failed)."""

import json

import pytest

from ipclab.lab import variants
from .conftest import PLAIN, ipclab, missing_prereq

pytestmark = [
    pytest.mark.skipif(missing_prereq() is not None, reason=str(missing_prereq())),
    pytest.mark.skipif(not variants.overlay_patches("wakeup-counters",
                                                    variants.load_variant(PLAIN).base, []),
                       reason=f"no wakeup counters for {PLAIN}'s base"),
]


@pytest.fixture(scope="module")
def census(tmp_path_factory):
    out = tmp_path_factory.mktemp("census") / "census.json"
    r = ipclab("census", PLAIN, "--deterministic", "--workload", "sleeping-reader",
               "--workload", "self-loop", "-o", str(out), timeout=3600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads(out.read_text()), r.stdout


def test_a_sleeping_reader_is_found_at_every_write(census):
    rec, _ = census
    row = next(w for w in rec["workloads"] if w["workload"] == "sleeping-reader")
    assert row["rc"] == 0
    # The counters are the whole guest's: a few writes of its own harness come on top of the
    # workload's 200 (24 on the production config), and they too find a sleeper.
    site = row["pipe"]["write-rd"]
    assert site["calls"] >= 200 and site["sleepers"] == site["calls"], site


def test_a_process_alone_with_its_pipe_is_never_found_asleep(census):
    rec, _ = census
    row = next(w for w in rec["workloads"] if w["workload"] == "self-loop")
    assert row["rc"] == 0
    # None of its own 1000 writes finds a sleeper; only the harness's few may (24 of 1024 on
    # the production config, as many as came on top of sleeping-reader's 200).
    site = row["pipe"]["write-rd"]
    assert site["calls"] >= 1000 and site["sleepers"] <= site["calls"] - 1000, site


def test_the_record_and_the_table_say_what_was_counted(census):
    rec, text = census
    assert rec["variant"] == f"{PLAIN}+wakeup-counters"
    assert rec["clock"]["mode"] == "deterministic" and rec["clock"]["cpus"] == 1
    assert [w["workload"] for w in rec["workloads"]] == ["sleeping-reader", "self-loop"]
    line = next(l for l in text.splitlines() if l.startswith("sleeping-reader"))
    site = next(w for w in rec["workloads"] if w["workload"] == "sleeping-reader")["pipe"]
    assert f"{site['write-rd']['sleepers']}/{site['write-rd']['calls']}" in line.split()
