# SPDX-License-Identifier: MIT
"""The one boot interface (vm.Backend, lab/backends.py): the suite, the census, the
conformance tests and the fault runs boot through their architecture's backend on both
architectures, with no path of their own around it. A stand-in backend records each call,
and vm.boot, which only a backend may call, fails the test."""

import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

from ipclab import proc
from ipclab.lab import ab, backends, census, faults, kernel, variants, vm

ROOT = Path(__file__).resolve().parents[2]
ARCHES = ("x86_64", "arm64")


class Recorder(vm.Backend):
    """A backend that boots nothing: each call recorded as (arch, what), a healthy boot
    returned."""

    def __init__(self, arch, calls, tmp):
        self.arch, self.calls, self.tmp = arch, calls, tmp

    def _boot(self, shared=None):
        return vm.Boot("mainline", "7.3.4", "tcg", shared or self.tmp, True, 0, None, [], "",
                       {}, {})

    def check_suite(self, job):
        self.calls.append((self.arch, "check_suite", job.suite))

    def suite(self, meta, accel, job, shared, **kw):
        self.calls.append((self.arch, "suite", job.suite))
        return self._boot(shared)

    def command(self, meta, argv, **kw):
        self.calls.append((self.arch, "command", tuple(argv)))
        return vm.GuestRun(self._boot(), "done\n")

    def conformance(self, meta, job, *, faults, kmemleak, **kw):
        self.calls.append((self.arch, "conformance", job.tests, bool(faults), kmemleak))
        return vm.GuestRun(self._boot(), "TAP version 13\n1..0\n", 0)

    def census_plan(self, job, workdir):
        self.calls.append((self.arch, "census_plan", job.names))
        return "plan"

    def census(self, meta, kern, job, plan, **kw):
        self.calls.append((self.arch, "census", plan))
        return self._boot(), []


@pytest.fixture
def calls(tmp_path, monkeypatch):
    """Every backend a Recorder; a boot around them fails the test."""
    got = []
    for arch in ARCHES:
        monkeypatch.setitem(backends.BACKENDS, arch, Recorder(arch, got, tmp_path))
    monkeypatch.setattr(vm, "boot", lambda *a, **k: pytest.fail("a boot around the backend"))
    monkeypatch.setattr(vm, "accel_for", lambda *a, **k: "tcg")
    monkeypatch.setattr(kernel, "obtain", lambda kern, **kw: kern if isinstance(kern, dict)
                        else meta(kern.arch))
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    return got


def meta(arch):
    return {"variant": "mainline", "arch": arch, "release": "7.3.4", "key": f"k-{arch}",
            "patches": []}


def fault_runs():
    path = ROOT / "scripts" / "fault-runs"
    loader = importlib.machinery.SourceFileLoader("fault_runs_backends", str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def test_for_arch_names_each_architecture_s_backend():
    assert sorted(backends.BACKENDS) == sorted(variants.ARCHES)
    assert all(backends.for_arch(a).arch == a for a in variants.ARCHES)
    assert backends.for_arch(None).arch == variants.DEFAULT_ARCH


@pytest.mark.parametrize("arch", ARCHES)
def test_suite_census_conformance_and_faults_boot_through_the_backend(arch, calls, tmp_path):
    with proc.dry_run(True):
        job = ab.suite_job("seeds", vm.TIMED, arch=arch)
        assert ab.vm_suite(meta(arch), job, tmp_path / "r.json", clock=vm.TIMED) is None
        kern = variants.resolve(census.counters_spec("mainline"), arch=arch)
        assert census.run(kern, workloads=["self-loop"], clock=vm.TIMED) == 0
    run = ab.vm_conformance(meta(arch), ["pipe_order"], clock=vm.TIMED)
    assert run.output.startswith("TAP version 13") and run.judged_rc == 0
    plan = faults.PLANS[0]
    row = fault_runs().run_boot(meta(arch), "mainline", plan, 1.0, 600, tmp_path / "out")
    assert row["boot"] == plan.name
    assert ab.vm_command(meta(arch), ["true"], clock=vm.TIMED).output == "done\n"
    assert calls == [(arch, "check_suite", "seeds"), (arch, "suite", "seeds"),
                     (arch, "census_plan", ("self-loop",)), (arch, "census", "plan"),
                     (arch, "conformance", ("pipe_order",), False, False),
                     (arch, "conformance", plan.tests, True, True),
                     (arch, "command", ("true",))]


@pytest.mark.parametrize("arch", ARCHES)
def test_the_command_line_boots_through_the_backend(arch, calls, capsys):
    from ipclab.cli import main
    for argv in (["vm", "run", "mainline", "seeds"], ["census", "mainline"],
                 ["vm", "run", "mainline", "--conformance"]):
        assert main([*argv, "--arch", arch, "--dry-run"]) == 0, capsys.readouterr().err
    assert [what for _, what, *_ in calls] == ["check_suite", "suite", "census_plan", "census",
                                              "conformance"]
    assert {a for a, *_ in calls} == {arch}
