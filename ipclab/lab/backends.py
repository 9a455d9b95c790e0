# SPDX-License-Identifier: MIT
"""Kernel lab, each architecture's backend (vm.Backend): the one way a command of the lab
boots a guest. The suite (ab.run_suite_boot), the census (census.run), the conformance tests
and the fault runs (ab.vm_conformance) ask for_arch(ARCH) and nothing else."""

from __future__ import annotations

from . import arm64, variants, vm, x86

BACKENDS: dict[str, vm.Backend] = {b.arch: b for b in (x86.BACKEND, arm64.BACKEND)}


def for_arch(arch: str | None) -> vm.Backend:
    """The backend that boots `arch` (the lab's default architecture for None: a build's
    meta from before --arch has none)."""
    return BACKENDS[arch or variants.DEFAULT_ARCH]
