# SPDX-License-Identifier: MIT
"""Kernel lab, run side: how a guest keeps time (clock.py), the accelerator (accel.py),
virtme-ng (vng.py), one boot of a variant running one job (boot.py), the QEMU
instruction-counting plugin (plugin.py), the jobs a boot hands the guest (job.py), and the
interface each architecture's backend implements (backend.py). Their names are the
package's."""

from .accel import (PROBE_TIMEOUT_S, accel_for, kvm_qemu_opts, machine_id, probe_accel,
                    probed_accel)
from .backend import Backend, GuestRun
from .boot import (BAD_DMESG, BENIGN_DMESG, Boot, boot, default_cpus, ensure_symbols,
                   map_from_kallsyms, scan)
from .clock import (DETERMINISTIC, DETERMINISTIC_CPUS, DETERMINISTIC_REPS, ICOUNT_SHIFT, TIMED,
                    Clock, qemu_version)
from .job import (FAULT_TASKS, CensusJob, ConformanceJob, SuiteJob, fault_injection,
                  parse_faults, parse_size, suite_thp)
from .plugin import (DEFAULT_PLUGIN_MEMORY, MARKS, PLUGIN_HEADERS, PLUGIN_MEMORY, PLUGIN_SOURCE,
                     SAMPLE_MARKERS, SYSCALL_PREFIX, fixed_layout_args, has_symbols,
                     insn_plugin, insn_plugin_opts, smp_code_args)
from .vng import (DEFAULT_CPUS, DEFAULT_MEMORY, GUEST_SCRIPT, MAX_CPUS, VNG, host_fs, new_shared,
                  run_vng, virtiofsd, vng_argv)
