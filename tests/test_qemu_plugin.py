# SPDX-License-Identifier: MIT
"""The QEMU plugin's decoder and cache model (kernel/qemu-plugin): the C known-answer test,
its fields as Python reads them, and the decoder against objdump over whole binaries."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

PLUGIN = Path(ROOT) / "kernel" / "qemu-plugin"
X86_LOCKED, X86_MFENCE, X86_LFENCE, X86_SFENCE, X86_IRQFLAG = 1, 2, 4, 8, 16

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")


@pytest.fixture(scope="module")
def selftest(tmp_path_factory):
    exe = tmp_path_factory.mktemp("plugin") / "selftest"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                    str(PLUGIN / "test" / "selftest.c")], check=True, timeout=120)
    return exe


def test_known_answers(selftest):
    r = subprocess.run([str(selftest)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout
    assert r.stdout.startswith("ok:")


def test_plugin_fields_are_the_ones_python_reads():
    from ipclab.deterministic import cost
    src = (PLUGIN / "insncount.c").read_text()

    def names(array):
        body = re.search(array + r"\[[A-Z]*\] = \{(.*?)\};", src, re.S).group(1)
        return tuple(re.findall(r'"(\w+)"', body))
    memory = names("mem_field_names")
    assert names("x86_field_names") + memory == cost.FIELDS
    assert names("a64_field_names") + memory == cost.A64_FIELDS
    assert f'"# {cost.PLUGIN_SCHEMA} fields:"' in src


# objdump's view of one instruction: address, bytes, then the text (prefix words included:
# "lock", "ds", "rex.W", "data16" ...).
OBJDUMP_LINE = re.compile(r"^\s*[0-9a-f]+:\t((?:[0-9a-f]{2} )+)\s*\t(.*)$")
PREFIX_WORDS = {"lock", "ds", "cs", "ss", "es", "fs", "gs", "data16", "addr32", "rex", "notrack",
                "bnd", "rep", "repz", "repnz", "repe", "repne", "xacquire", "xrelease"}


def has_memory_operand(operands):
    """AT&T operands: a memory operand has a base in parentheses, or is a bare address
    (after an optional segment: %fs:0x1c), neither a register (%) nor an immediate ($)."""
    depth, parts, cur = 0, [], ""
    for ch in operands:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for op in (p.strip() for p in parts if p.strip()):
        if "(" in op:
            return True
        bare = op.split(":", 1)[1] if op.startswith("%") and ":" in op else op
        if not bare.startswith(("%", "$")):
            return True
    return False


def expected(text):
    words = text.split()
    prefixes = []
    while words and (words[0] in PREFIX_WORDS or words[0].startswith("rex.")):
        prefixes.append(words.pop(0))
    if not words:
        return None
    mnem, operands = words[0], " ".join(words[1:])
    ev = 0
    if "lock" in prefixes or (mnem.startswith("xchg") and has_memory_operand(operands)):
        ev |= X86_LOCKED
    ev |= {"mfence": X86_MFENCE, "lfence": X86_LFENCE, "sfence": X86_SFENCE}.get(mnem, 0)
    if mnem in ("cli", "sti", "popf", "popfq", "popfw"):
        ev |= X86_IRQFLAG
    return ev


def disassembly(binary):
    r = subprocess.run(["objdump", "-d", "--insn-width=15", binary], capture_output=True,
                       text=True, timeout=600, check=True)
    rows = []
    for line in r.stdout.splitlines():
        m = OBJDUMP_LINE.match(line)
        if m and "(bad)" not in m.group(2):
            want = expected(m.group(2))
            if want is not None:
                rows.append((m.group(1).strip(), m.group(2).strip(), want))
    return rows


def binaries():
    libc = Path("/lib/x86_64-linux-gnu/libc.so.6")
    found = [libc] if libc.exists() else []
    engine = Path(ROOT) / "bench" / "ipcbench"
    if engine.exists():
        found.append(engine)
    return found


@pytest.mark.skipif(shutil.which("objdump") is None, reason="no objdump")
@pytest.mark.parametrize("binary", binaries(), ids=lambda p: p.name)
def test_decoder_agrees_with_objdump(selftest, binary):
    rows = disassembly(str(binary))
    assert len(rows) > 1000
    r = subprocess.run([str(selftest), "-"], input="".join(b + "\n" for b, _, _ in rows),
                       capture_output=True, text=True, timeout=300, check=True)
    got = [int(x) for x in r.stdout.split()]
    assert len(got) == len(rows)
    wrong = [(text, bytes_, want, g) for (bytes_, text, want), g in zip(rows, got) if g != want]
    assert not wrong, f"{len(wrong)} of {len(rows)} disagree, e.g. {wrong[:5]}"
    # The binary must exercise what is checked: libc has locked instructions.
    if binary.name.startswith("libc"):
        assert sum(1 for _, _, w in rows if w & X86_LOCKED) > 50


# ----------------------------------------------------------------------------- A64

A64_LSE, A64_LDEX, A64_STEX, A64_ACQUIRE, A64_RELEASE = 1, 2, 4, 8, 16
A64_DMB_ISH, A64_DMB_ISHLD, A64_DMB_ISHST, A64_DMB_OTHER = 32, 64, 128, 256
A64_DSB, A64_ISB, A64_DAIF = 512, 1024, 2048
A64_LINE = re.compile(r"^\s*[0-9a-f]+:\t([0-9a-f]{8}) \t(\S+)\s*(.*)$")
A64_OBJDUMP = "aarch64-linux-gnu-objdump"


def a64_expected(mnem, operands):
    """The events of one A64 instruction by objdump's name for it, told apart from
    a64-events.h's bit fields by its own route: the mnemonic's letters."""
    m = re.fullmatch(r"(?:ld|st)(?:add|clr|eor|set|smax|smin|umax|umin)(a?)(l?)[bh]?", mnem) \
        or re.fullmatch(r"(?:swp|casp?)(a?)(l?)[bh]?", mnem)
    if m:
        return A64_LSE | (A64_ACQUIRE if m.group(1) else 0) | (A64_RELEASE if m.group(2) else 0)
    m = re.fullmatch(r"ld(a?)x[rp][bh]?", mnem)
    if m:
        return A64_LDEX | (A64_ACQUIRE if m.group(1) else 0)
    m = re.fullmatch(r"st(l?)x[rp][bh]?", mnem)
    if m:
        return A64_STEX | (A64_RELEASE if m.group(1) else 0)
    if re.fullmatch(r"(?:ldar|ldlar|ldapr|ldapur)s?[bhw]?", mnem):
        return A64_ACQUIRE
    if re.fullmatch(r"(?:stlr|stllr|stlur)[bh]?", mnem):
        return A64_RELEASE
    if mnem == "dmb":
        return {"ish": A64_DMB_ISH, "ishld": A64_DMB_ISHLD,
                "ishst": A64_DMB_ISHST}.get(operands, A64_DMB_OTHER)
    if mnem in ("dsb", "isb"):
        return A64_DSB if mnem == "dsb" else A64_ISB
    if mnem == "msr" and re.match(r"daif(?:set|clr)?,", operands):
        return A64_DAIF
    return 0


def a64_disassembly(binary):
    r = subprocess.run([A64_OBJDUMP, "-d", binary], capture_output=True, text=True,
                       timeout=600, check=True)
    rows = []
    for line in r.stdout.splitlines():
        m = A64_LINE.match(line)
        # .inst: a word objdump does not know; .word: data in a code section
        if m and not m.group(2).startswith("."):
            operands = m.group(3).split("//")[0].strip()
            rows.append((m.group(1), f"{m.group(2)} {operands}", a64_expected(m.group(2), operands)))
    return rows


def a64_binaries():
    found = [p for p in (Path("/usr/aarch64-linux-gnu/lib/libc.so.6"),) if p.exists()]
    # The arm64 kernel the lab built, when there is one: the instructions that matter most.
    found += sorted(Path(os.environ.get("IPCLAB_CACHE", "/var/cache/ipclab")).glob(
        "src/*/build/*@arm64/vmlinux"))[:1]
    return found


@pytest.mark.skipif(shutil.which(A64_OBJDUMP) is None, reason="no aarch64-linux-gnu-objdump")
@pytest.mark.parametrize("binary", a64_binaries(), ids=lambda p: p.name)
def test_a64_decoder_agrees_with_objdump(selftest, binary):
    rows = a64_disassembly(str(binary))
    assert len(rows) > 1000
    r = subprocess.run([str(selftest), "-", "a64"], input="".join(w + "\n" for w, _, _ in rows),
                       capture_output=True, text=True, timeout=300, check=True)
    got = [int(x) for x in r.stdout.split()]
    assert len(got) == len(rows)
    wrong = [(text, word, want, g) for (word, text, want), g in zip(rows, got) if g != want]
    assert not wrong, f"{len(wrong)} of {len(rows)} disagree, e.g. {wrong[:5]}"
    # The binary must exercise what is checked: libc has exclusives and barriers; the
    # kernel has every kind the lab reads but DSB nXS.
    kinds = {k for _, _, w in rows for k in (A64_LDEX, A64_STEX, A64_DMB_ISH, A64_ACQUIRE,
                                             A64_RELEASE) if w & k}
    assert len(kinds) == 5
    if binary.name == "vmlinux":
        seen = 0
        for _, _, w in rows:
            seen |= w
        assert seen & (A64_LSE | A64_DMB_ISHLD | A64_DMB_ISHST | A64_DSB | A64_ISB | A64_DAIF) \
            == A64_LSE | A64_DMB_ISHLD | A64_DMB_ISHST | A64_DSB | A64_ISB | A64_DAIF
