# SPDX-License-Identifier: MIT
"""The mode a measurement is made in, timed or deterministic, as one object.

The command line decides it once (`--deterministic`, `--timed`: ipclab/cli) and passes the
object down; a results file's mode is read once, `Mode.of(res)`. Everything that differs
between the two modes is asked of the object, never decided again from a boolean, a clock
string or a default of its own:

- the engine's clock (`clock`: what IPCBENCH_CLOCK and every sample's env.clock say),
- the unit a time is in (`unit`: guest instructions or nanoseconds),
- the boots per side and the repetitions per cell when the command line names none,
- the A/A floors the deterministic rule takes its noise from (`floors`),
- and which rule judges a difference (`rule`: the deterministic rule against the floor, or
  the timed paired test).

Timed: KVM, or multi-threaded TCG whose guest time follows the host's (under TCG, emulation
noise). Deterministic: single-threaded TCG with icount, whose guest time counts the guest's
instructions whatever the host is doing. The lab's `vm.Clock` is this object with the QEMU
options and the boot record that say so (ipclab/lab/vm/clock.py).

A low module: compare/ and report/ import it without importing the lab.
"""

from __future__ import annotations

import dataclasses

from ipclab import results
from ipclab.deterministic import REAL, floor

# shift=0: one guest instruction per nanosecond of guest time, so a time is an instruction
# count.
ICOUNT_SHIFT = 0
# Samples repeat to a few parts in 10^4 under icount, but a multi-process cell has the odd
# outlier (a timer tick that changes who runs when). Nine is the fewest for which the
# median's 95% interval leaves out the most extreme sample on each side.
DETERMINISTIC_REPS = 9
# Under icount a boot repeats to the instruction, so one boot per side is the method. Timed
# boots vary by tens of percent: the boot is the unit of the comparison, and a paired test
# needs at least 3 pairs to claim anything (5 give it some power).
DETERMINISTIC_BOOTS = 1
TIMED_BOOTS = 5

TIMED_NAME, DETERMINISTIC_NAME = "timed", "deterministic"


@dataclasses.dataclass(frozen=True, eq=False)
class Mode:
    """Timed or deterministic, and all that follows from it. Equal modes are equal whatever
    their class (the lab's vm.Clock is a Mode)."""
    deterministic: bool = False
    # icount's shift (deterministic); None when a results file named none.
    shift: int | None = ICOUNT_SHIFT

    # ----------------------------------------------------------------- deciding it, once

    @classmethod
    def chosen(cls, deterministic: bool) -> Mode:
        """The mode the command line chose: its one decision (ipclab/cli), and a bisect
        log's of the old code (whose params held a bool)."""
        return cls(deterministic=bool(deterministic))

    @classmethod
    def named(cls, name: str) -> Mode:
        """The mode a record names ("timed" or "deterministic", `name`)."""
        if name not in (TIMED_NAME, DETERMINISTIC_NAME):
            raise ValueError(f"not a mode: {name!r}")
        return cls(deterministic=name == DETERMINISTIC_NAME)

    @classmethod
    def of_clock(cls, clock: str | None) -> Mode:
        """The mode of an engine clock string: "icount shift=N" is deterministic, anything
        else (REAL) timed."""
        if clock and clock.startswith("icount"):
            _, _, shift = clock.partition("shift=")
            return cls(deterministic=True, shift=int(shift) if shift.isdigit() else None)
        return cls(deterministic=False)

    @classmethod
    def of(cls, res: dict) -> Mode:
        """The mode a results file was measured in: its lab record's, else the engine's
        clock (the file's env, or its first sample's)."""
        meta_clock = results.guest_clock(res)
        if meta_clock and meta_clock.get("mode") == DETERMINISTIC_NAME:
            shift = meta_clock.get("icount", {}).get("shift")
            return cls(deterministic=True, shift=shift if isinstance(shift, int) else None)
        env_clock = res.get("env", {}).get("clock")
        if not env_clock:
            env_clock = next((smp["env"]["clock"] for cell in res.get("cells", [])
                              for smp in cell.get("samples", [])
                              if smp.get("env", {}).get("clock")), None)
        return cls.of_clock(env_clock)

    # ----------------------------------------------------------------- what follows from it

    @property
    def name(self) -> str:
        return DETERMINISTIC_NAME if self.deterministic else TIMED_NAME

    # The lab's records and step times say "mode"; the same name.
    mode = name

    @property
    def clock(self) -> str:
        """IPCBENCH_CLOCK in the guest: what every sample's env.clock records."""
        if not self.deterministic:
            return REAL
        return f"icount shift={'?' if self.shift is None else self.shift}"

    def engine_clock(self) -> str:
        return self.clock

    @property
    def unit(self) -> str:
        """What a time the engine measures is in."""
        return "insn" if self.deterministic else "ns"

    @property
    def unit_text(self) -> str:
        return "guest instructions" if self.deterministic else "ns"

    @property
    def boots(self) -> int:
        """Boots per side (per commit, for bisect) when the command line names none."""
        return DETERMINISTIC_BOOTS if self.deterministic else TIMED_BOOTS

    @property
    def reps(self) -> int | None:
        """Repetitions per cell when the command line names none; None: the suite's own."""
        return DETERMINISTIC_REPS if self.deterministic else None

    @property
    def rule(self) -> str:
        """The rule that judges a difference, as a comparison record's rows name it:
        "deterministic" (against the A/A floor) or "timed" (the paired test)."""
        return self.name

    def floors(self, cpus, base, data: dict | None = None) -> tuple[dict, dict | None]:
        """({key: Floor}, entry): the A/A floors of this mode's clock for `cpus` guest CPUs
        and kernel `base`, from the floor file's `data` (parsed here when not given). The
        timed mode has none: its rule takes the noise from the boots."""
        if not self.deterministic:
            return {}, None
        return floor.floors_for(floor.read_or_empty() if data is None else data, self.clock,
                                cpus, base)

    def caveat(self, accel: str = "native") -> str:
        """What the mode's times mean under `accel`, in one sentence; "" when they are native
        time. The one place this is said: the CLI, reports, compare and the lab all use it."""
        if self.deterministic:
            return (f"deterministic clock ({self.clock}): times are guest instructions and"
                    " rates are per 10^9 guest instructions, not per second")
        if accel == "tcg":
            return ("accel=tcg: timings are emulated (~25x slower than native, and they move"
                    " by tens of percent between boots); compare counts and ratios, not times")
        if accel and accel != "native":
            return f"accel={accel}: timings include the hypervisor's; compare runs on the same VM"
        return ""

    def __eq__(self, other):
        if not isinstance(other, Mode):
            return NotImplemented
        return (self.deterministic, self.shift if self.deterministic else None) == \
            (other.deterministic, other.shift if other.deterministic else None)

    def __hash__(self):
        return hash((self.deterministic, self.shift if self.deterministic else None))

    def __str__(self):
        return self.name


TIMED = Mode()
DETERMINISTIC = Mode(deterministic=True)


def caveat_of(res: dict) -> str:
    """What a results file's times mean (Mode.caveat with its accelerator)."""
    return Mode.of(res).caveat(results.accel(res))
