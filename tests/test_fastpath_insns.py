# SPDX-License-Identifier: MIT
"""scripts/fastpath-insns on hand-written x86-64 functions, so that every count is known: the
fast path of a helper that clears an array before its test (as 7.3.4's pool helpers do under
CONFIG_INIT_STACK_ALL_ZERO) and of one that clears it after, tail calls, jumps inside the
function, a loop, and its refusals."""
import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "fastpath-insns")

ASM = """\
	.text
	.globl	before, after, looping, other
before:
	push	%rbx
	mov	$8, %ecx
	rep stosq
	cmp	$2, %esi
	jbe	1f
	call	other
1:	pop	%rbx
	jmp	unlock
after:
	push	%rbx
	cmp	$2, %esi
	jbe	2f
	mov	$8, %ecx
	rep stosq
	call	other
2:	pop	%rbx
	jmp	3f
3:	ret
looping:
4:	dec	%esi
	jmp	4b
other:
	ret
"""

pytestmark = pytest.mark.skipif(shutil.which("as") is None or shutil.which("objdump") is None,
                                reason="binutils (as, objdump) needed")


@pytest.fixture(scope="module")
def obj(tmp_path_factory):
    d = tmp_path_factory.mktemp("fastpath")
    (d / "f.s").write_text(ASM)
    subprocess.run(["as", "--64", "-o", str(d / "f.o"), str(d / "f.s")], check=True,
                   timeout=60)
    return d / "f.o"


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("func, take, want", [
    ("before", 1, "before: 7 instructions, 1 rep-string"),   # the clearing is on the path
    ("before", 0, "before: 8 instructions, 1 rep-string"),   # the call, then the tail call
    ("after", 1, "after: 6 instructions, 0 rep-string"),     # the jump inside, then ret
    ("after", 0, "after: 9 instructions, 1 rep-string"),
])
def test_counts_the_path(obj, func, take, want):
    r = run(obj, func, "--take", take)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == want


def test_lists_the_path(obj):
    r = run(obj, "after", "--list")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["push", "cmp", "jbe", "pop", "jmp",
                                                        "ret"]


@pytest.mark.parametrize("args, message", [
    (["looping"], "loops"),
    (["nosuch"], "no function nosuch"),
    (["before", "--take", "-1"], "--take -1"),
])
def test_refusals_are_one_line_and_exit_2(obj, args, message):
    r = run(obj, *args)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and message in r.stderr, r.stderr


def test_a_missing_object_is_bad_input(tmp_path):
    r = run(tmp_path / "none.o", "f")
    assert r.returncode == 2 and r.stderr.startswith("fastpath-insns: error: ")
