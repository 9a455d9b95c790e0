# SPDX-License-Identifier: MIT
"""scripts/sign-series on small format-patch mails: the From: header it writes, where the
sign-off goes and where it does not, its refusals, and how it reads checkpatch's totals (a
fake checkpatch: no kernel source needed). Also that the committed series presents its
placeholder author as no one's sign-off."""
import email
import email.policy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "sign-series")
WHO = "Ada Tester <ada@example.org>"
SOB = "Signed-off-by: " + WHO

HEAD = """\
From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001
From: ipclab kernel <kernel@ipclab.invalid>
Date: Tue, 24 Nov 2026 12:01:00 +0000
Subject: [PATCH 1/2] pipe: do one thing
 and say so on two lines

"""
DIFF = """\
---
 fs/pipe.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/fs/pipe.c b/fs/pipe.c
index 1111111..2222222 100644
--- a/fs/pipe.c
+++ b/fs/pipe.c
@@ -1,2 +1,3 @@
 a
+b
 c
-- 
2.39.5
"""
PLAIN = HEAD + "Why it is needed.\n\nWhat it does.\n" + DIFF
TRAILERS = HEAD + ("Why it is needed.\n\nFixes: 0123456789ab (\"pipe: x\")\n"
                   "Reported-by: R <r@r.org>\n") + DIFF
COVER = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: ipclab kernel <kernel@ipclab.invalid>
Date: Tue, 24 Nov 2026 12:00:00 +0000
Subject: [PATCH 0/2] pipe: two things

What the series does.

Tests run
---------

All of them.
"""


def sign(*args, env=None):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.fixture
def mails(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    for name, text in {"0000-cover.patch": COVER, "0001-plain.patch": PLAIN,
                       "0002-trailers.patch": TRAILERS}.items():
        (d / name).write_text(text)
    return d


def signed(out, name):
    return (out / name).read_text()


def test_signoff_ends_the_message_just_before_the_diffstat(mails, tmp_path):
    out = tmp_path / "out"
    r = sign(WHO, out, "--allow-test-identity", mails / "0001-plain.patch")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(out / "0001-plain.patch")]
    want = PLAIN.replace("From: ipclab kernel <kernel@ipclab.invalid>", "From: " + WHO) \
        .replace("What it does.\n---\n", f"What it does.\n\n{SOB}\n---\n")
    assert signed(out, "0001-plain.patch") == want


def test_signoff_joins_an_existing_trailer_block(mails, tmp_path):
    out = tmp_path / "out"
    assert sign(WHO, out, "--allow-test-identity", mails / "0002-trailers.patch").returncode == 0
    text = signed(out, "0002-trailers.patch")
    assert f"Reported-by: R <r@r.org>\n{SOB}\n---\n" in text
    assert text.count("Signed-off-by:") == 1


def test_cover_letter_gets_the_from_and_no_signoff(mails, tmp_path):
    out = tmp_path / "out"
    assert sign(WHO, out, "--allow-test-identity", mails / "0000-cover.patch").returncode == 0
    assert signed(out, "0000-cover.patch") == COVER.replace(
        "ipclab kernel <kernel@ipclab.invalid>", WHO)


def test_a_mail_without_a_diff_is_a_cover_letter(tmp_path):
    mail = tmp_path / "0001-nodiff.patch"
    mail.write_text(HEAD + "Only words.\n")
    assert sign(WHO, tmp_path / "out", "--allow-test-identity", mail).returncode == 0
    assert "Signed-off-by" not in signed(tmp_path / "out", mail.name)


def test_signing_twice_changes_nothing(mails, tmp_path):
    once, twice = tmp_path / "once", tmp_path / "twice"
    assert sign(WHO, once, "--allow-test-identity", *sorted(mails.iterdir())).returncode == 0
    assert sign(WHO, twice, "--allow-test-identity", *sorted(once.iterdir())).returncode == 0
    for p in once.iterdir():
        assert signed(twice, p.name) == p.read_text()
        assert p.read_text().count(SOB) == (0 if "cover" in p.name else 1)


def test_a_name_outside_ascii_is_encoded_in_the_header(mails, tmp_path):
    who = "Zoë Łukasz <zl@example.org>"
    assert sign(who, tmp_path / "out", "--allow-test-identity",
                mails / "0001-plain.patch").returncode == 0
    text = signed(tmp_path / "out", "0001-plain.patch")
    msg = email.message_from_string(text, policy=email.policy.default)
    assert str(msg["From"]) == who and msg.get_content_charset() == "utf-8"
    assert f"\n\nSigned-off-by: {who}\n---\n" in text
    assert re.search(r"^From: =\?utf-8\?", text, re.M | re.I)


def refusals(tmp, mails):
    (tmp / "full").mkdir()
    (tmp / "full" / "x").write_text("")
    (tmp / "afile").write_text("")
    (tmp / "plain.diff").write_text(DIFF)
    (tmp / "two.mbox").write_text(PLAIN + PLAIN)
    ok = mails / "0001-plain.patch"
    return {
        "no email": ["Ada Tester", tmp / "o", ok],
        "no name": ["<ada@kernel.org>", tmp / "o", ok],
        "no brackets": ["Ada ada@kernel.org", tmp / "o", ok],
        "no domain": ["Ada <ada@localhost>", tmp / "o", ok],
        "two lines": ["Ada\nEvil <ada@kernel.org>", tmp / "o", ok],
        ".invalid": ["ipclab kernel <kernel@ipclab.invalid>", tmp / "o", ok],
        ".test": ["Ada <ada@lab.test>", tmp / "o", ok],
        ".example": ["Ada <ada@lab.example>", tmp / "o", ok],
        "example.com": ["Ada <ada@EXAMPLE.com>", tmp / "o", ok],
        "example.net": ["Ada <ada@example.net>", tmp / "o", ok],
        "outdir not empty": [WHO, tmp / "full", "--allow-test-identity", ok],
        "outdir a file": [WHO, tmp / "afile", "--allow-test-identity", ok],
        "missing patch": [WHO, tmp / "o", "--allow-test-identity", tmp / "nope.patch"],
        "plain diff": [WHO, tmp / "o", "--allow-test-identity", tmp / "plain.diff"],
        "two mails": [WHO, tmp / "o", "--allow-test-identity", tmp / "two.mbox"],
        "same name twice": [WHO, tmp / "o", "--allow-test-identity", ok, ok],
    }


REFUSALS = ["no email", "no name", "no brackets", "no domain", "two lines", ".invalid", ".test",
            ".example", "example.com", "example.net", "outdir not empty", "outdir a file",
            "missing patch", "plain diff", "two mails", "same name twice"]


@pytest.mark.parametrize("case", REFUSALS)
def test_refusals_are_one_line_and_exit_2(case, mails, tmp_path):
    args = refusals(tmp_path, mails)[case]
    r = sign(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sign-series: error: "), r.stderr
    assert not (tmp_path / "o").exists(), "wrote something while refusing"
    assert os.listdir(tmp_path / "full") == ["x"]


def committed_series():
    """(base, series name or '', its mail names) of every series under kernel/patches."""
    found = []
    for d in sorted((Path(ROOT) / "kernel" / "patches").iterdir()):
        groups = {}
        for p in sorted(d.glob("*.patch")):
            m = re.fullmatch(r"(?:([a-z][a-z0-9]*)-)?\d{4}-.+\.patch", p.name)
            if m and m.group(1) != "lab":
                groups.setdefault(m.group(1) or "", []).append(p.name)
        found += [(d.name, name, names) for name, names in sorted(groups.items())]
    return found


@pytest.mark.parametrize("base, series, names", committed_series(),
                         ids=lambda x: x if isinstance(x, str) else None)
def test_a_base_s_series_signs(base, series, names, tmp_path):
    out = tmp_path / "out"
    pick = ["--series", series] if series else []
    r = sign("Test Submitter <test@example.org>", out, "--allow-test-identity", "--draft",
             "--base", base, *pick)
    assert r.returncode == 0, r.stderr
    written = sorted(p.name for p in out.iterdir())
    cover = (series + "-" if series else "") + "0000-"
    # Several patches open with their cover letter; a single patch goes without one.
    assert written == names
    assert written[0].startswith(cover) if len(written) > 1 else \
        not written[0].startswith(cover)
    for name in written:
        text = signed(out, name)
        assert text.count("Signed-off-by: Test Submitter <test@example.org>\n---\n") == \
            (0 if name.startswith(cover) else 1), name


def test_mainline_has_one_series_per_tree():
    assert {s for b, s, _ in committed_series() if b == "mainline"} == {"pipe", "mqueue"}


def test_a_base_with_two_series_needs_series(tmp_path):
    r = sign(WHO, tmp_path / "o", "--allow-test-identity", "--base", "mainline")
    assert r.returncode == 2 and "--series" in r.stderr and "mqueue, pipe" in r.stderr
    r = sign(WHO, tmp_path / "o", "--allow-test-identity", "--series", "nope")
    assert r.returncode == 2 and "--series nope" in r.stderr
    assert not (tmp_path / "o").exists()


def test_a_mail_with_a_place_for_a_figure_needs_draft(mails, tmp_path):
    mail = mails / "0003-draft.patch"
    mail.write_text(HEAD + "Why.\n\n[TBD: the counts of the run named here]\n" + DIFF)
    r = sign(WHO, tmp_path / "o", "--allow-test-identity", mails / "0001-plain.patch", mail)
    assert r.returncode == 2 and "[TBD" in r.stderr and "1 of 2" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()
    r = sign(WHO, tmp_path / "o", "--allow-test-identity", "--draft", mail)
    assert r.returncode == 0, r.stderr
    assert "[TBD: the counts" in signed(tmp_path / "o", mail.name)


def test_committed_patches_present_no_placeholder_signoff():
    found = []
    for p in sorted((Path(ROOT) / "kernel" / "patches").glob("*/*.patch")):
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if re.match(r"\s*Signed-off-by:.*\.invalid\b", line, re.I):
                found.append(f"{p.name}:{n}: {line.strip()}")
    assert not found, "a placeholder presented as a sign-off:\n" + "\n".join(found)


FAKE_CHECKPATCH = """\
#!/usr/bin/perl
# What checkpatch.pl prints and returns, as FAKE_TOTAL and FAKE_EXIT say.
my $t = $ENV{FAKE_TOTAL};
die "not --strict --no-tree" unless "@ARGV" =~ /^--strict --no-tree /;
print "WARNING: something\\n" if $t =~ /[1-9]/;
print "total: $t, 12 lines checked\\n" if $t ne "none";
exit($ENV{FAKE_EXIT});
"""


@pytest.fixture
def fake_kernel(tmp_path):
    """An IPCLAB_KERNEL_SRC with a fake checkpatch.pl, and no other checkpatch to find."""
    if shutil.which("perl") is None:
        pytest.skip("perl needed")
    scripts = tmp_path / "linux" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "checkpatch.pl").write_text(FAKE_CHECKPATCH)
    (scripts / "spelling.txt").write_text("")
    (scripts / "const_structs.checkpatch").write_text("")
    return {**os.environ, "IPCLAB_KERNEL_SRC": str(tmp_path / "linux"),
            "IPCLAB_CACHE": str(tmp_path / "nocache"),
            "IPCLAB_SOURCES": str(tmp_path / "nosources"),
            "IPCLAB_MAINLINE_TARBALL": str(tmp_path / "none.tar.xz")}


@pytest.mark.parametrize("total, status, code", [
    ("0 errors, 0 warnings, 0 checks", 0, 0),
    ("0 errors, 0 warnings, 1 checks", 1, 1),
    ("0 errors, 2 warnings, 0 checks", 1, 1),
    ("1 errors, 0 warnings, 0 checks", 1, 1),
    ("0 errors, 0 warnings, 0 checks", 1, 1),   # clean totals, but checkpatch failed
    ("0 errors, 0 warnings", 0, 1),             # no checks counted: not --strict
    ("none", 0, 1),                             # no summary at all
])
def test_check_reads_checkpatch_totals(total, status, code, fake_kernel, mails, tmp_path):
    fake_kernel.update(FAKE_TOTAL=total, FAKE_EXIT=str(status))
    out = tmp_path / "out"
    r = sign(WHO, out, "--allow-test-identity", "--check", *sorted(mails.iterdir()),
             env=fake_kernel)
    assert r.returncode == code, r.stdout + r.stderr
    checked = "2 of 2 patches clean" if code == 0 else "0 of 2 patches clean"
    assert r.stdout.rstrip().endswith("checkpatch: " + checked), r.stdout
    # The cover letter is written but not checked.
    assert (out / "0000-cover.patch").exists() and "== " + str(out / "0000") not in r.stdout
    if code:
        assert ("== " + str(out / "0001-plain.patch")) in r.stdout


def test_check_without_any_checkpatch_exits_3(fake_kernel, mails, tmp_path):
    fake_kernel["IPCLAB_KERNEL_SRC"] = str(tmp_path / "nowhere")
    r = sign(WHO, tmp_path / "out", "--allow-test-identity", "--check",
             mails / "0001-plain.patch", env=fake_kernel)
    assert r.returncode == 3, r.stdout + r.stderr
    assert len(r.stderr.splitlines()) == 1 and "no checkpatch.pl" in r.stderr
