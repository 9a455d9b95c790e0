# SPDX-License-Identifier: MIT
"""`ab -o DIR --resume`: a boot lost (a Slurm job cancelled or out of time, a guest that
died) boots again, and only it; the boots that completed are kept, and the comparison is
made of them all. A boot file of another ab is refused, not overwritten. The boots are a fake
executor's (what executor.Local or executor.Slurm give ab); the rest of ab is real."""

import pytest

from ipclab import Error, results, runner, suites
from ipclab.cli.parser import build_parser
from ipclab.lab import ab, executor, vm

CELL = "pipe-throughput/copies=1"


def meta(name):
    return {"variant": name, "key": f"{name:0<20}"[:20], "release": "7.3.4", "source": "src",
            "patches": [{"name": f"{name}.patch", "sha256": name}], "config_sha256": "c"}


class FakeBoots(executor.Local):
    """Boots every planned boot but those named in `lose`, which leave no results, as a
    cancelled Slurm job does. Remembers what it was asked to boot. Its images are the
    prebuilt kind (Local's, which builds none of them)."""

    def __init__(self, lose=()):
        self.lose, self.asked = set(lose), []

    def run_boots(self, planned, o, here):
        done = []
        for p in planned:
            self.asked.append(p.label)
            lost = p.label in self.lose
            boot = vm.Boot(p.meta["variant"], "7.3.4", "tcg", p.out.parent, not lost,
                           None if lost else 0, "slurm job 7 cancelled" if lost else None,
                           [], "", {"boot_total_s": 10.0}, {"nproc": 2}, {"mode": "timed"})
            if lost:
                res = here.failed(p, boot, "slurm-7")
            else:
                _, _, cells, reps, warmups = runner.plan(o.job.suite, (), False, o.job.reps,
                                                         None)
                cells = suites.select(cells, o.job.cells)
                res = results.new("r", o.job.suite, o.job.mode, cells, reps, warmups, None)
                for c in res["cells"]:
                    c["status"] = "ok"
                    c["samples"] = [{"metrics": {"loops_per_s": {
                        "value": 1000.0 + i, "unit": "loops/s", "better": "higher"}}}
                        for i in range(reps)]
                res["complete"] = True
                ab.tag_boot(res, boot, p.meta)
            results.save(res, p.out)
            done.append((res, boot))
        return done


@pytest.fixture
def lab(monkeypatch):
    monkeypatch.setattr(vm, "accel_for", lambda *a, **k: "tcg")
    monkeypatch.setattr(ab.step_times, "note_boot", lambda *a, **k: None, raising=False)
    return vm.SuiteJob("icount-check", suites.QUICK, 3, None, None, (CELL,))


def run(job, out, executor, boots=3, resume=False, new="vB"):
    return ab.run_ab(meta("vA"), meta(new), job, boots=boots, clock=vm.TIMED, outdir=out,
                     executor=executor, resume=resume)


def test_resume_boots_only_what_was_lost_and_compares_every_boot(tmp_path, lab):
    out = tmp_path / "ab"
    first = FakeBoots(lose={"boot 2/3 of B"})
    r1 = run(lab, out, first)
    assert len(first.asked) == 6 and r1.failures == ["B boot 2: slurm job 7 cancelled"]
    # the lost boot is reported, and the comparison is made of the boots that were not lost
    b_boots = {s["lab_boot"] for c in r1.merged["B"]["cells"] for s in c["samples"]}
    assert b_boots == {1, 3} and r1.record["rows"]
    again = FakeBoots()
    r2 = run(lab, out, again, resume=True)
    assert again.asked == ["boot 2/3 of B"] and r2.failures == []
    for side in "AB":
        merged = r2.merged[side]
        boots_seen = {s.get("lab_boot") for c in merged["cells"] for s in c["samples"]}
        assert boots_seen == {1, 2, 3}, (side, boots_seen)
    # more boots than before: the kept ones stay, the new ones boot
    more = FakeBoots()
    run(lab, out, more, boots=4, resume=True)
    assert more.asked == ["boot 4/4 of A", "boot 4/4 of B"]


def test_without_resume_every_boot_boots_again(tmp_path, lab):
    out = tmp_path / "ab"
    run(lab, out, FakeBoots())
    again = FakeBoots()
    run(lab, out, again)
    assert len(again.asked) == 6


def test_a_boot_file_of_another_ab_is_refused_not_overwritten(tmp_path, lab):
    out = tmp_path / "ab"
    run(lab, out, FakeBoots())
    other = vm.SuiteJob("icount-check", suites.QUICK, 3, None, None, ("pipe-sweep/w=1,r=1",))
    before = (out / "A-vA-boot1.json").read_text()
    with pytest.raises(Error) as e:
        run(other, out, FakeBoots(), resume=True)
    assert e.value.code == 2 and "another ab (other cells)" in str(e.value)
    assert (out / "A-vA-boot1.json").read_text() == before


def test_resume_without_a_folder_is_one_line_and_exit_2(tmp_path):
    from ipclab.cli import lab as cli_lab
    for argv in (["ab", "a", "b", "--resume"],
                 ["ab", "a", "b", "--resume", "-o", str(tmp_path / "none")]):
        args = build_parser().parse_args(argv)
        with pytest.raises(Error) as e:
            cli_lab.cmd_ab(args)
        assert e.value.code == 2 and "--resume" in str(e.value) and "\n" not in str(e.value)


def test_a_side_whose_every_boot_was_lost_is_a_failure_not_bad_input(tmp_path, lab):
    lose = {f"boot {i}/2 of B" for i in (1, 2)}
    with pytest.raises(Error) as e:
        run(lab, tmp_path / "ab", FakeBoots(lose=lose), boots=2)
    assert e.value.code == 1 and "no boot left results" in str(e.value)
    assert "slurm job 7 cancelled" in str(e.value)
