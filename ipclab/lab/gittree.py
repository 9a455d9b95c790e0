# SPDX-License-Identifier: MIT
"""Kernel lab, a user's own git tree: refs to commits, their names, the range a bisect walks,
and the lab's own checkout of a commit.

The user's work tree and index are never touched: each user repository gets one lab clone
under the cache (`git clone --shared`, so its objects are the user's, borrowed, not copied),
and that clone is what is checked out and built. Moving it from one commit to another
rewrites only the files that differ, so make rebuilds only what they change.

    git/<repo key>/src/              the lab's checkout (detached HEAD)
    git/<repo key>/build/<config>/   one O= build dir per config, shared by all commits
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ipclab import EXIT_FAILED, Error, proc
from ipclab.progress import log

GIT_TIMEOUT_S = 600


def git(repo: Path, *args: str, timeout: float = GIT_TIMEOUT_S, check: bool = True) -> str:
    """stdout of `git -C repo ARGS`; Error (exit 1) when it fails and `check` is on."""
    done = proc.run(["git", "-C", str(repo), *args], timeout, capture=True)
    if done.timed_out:
        raise Error(f"git {args[0]} in {repo}: timed out after {timeout:.0f} s", EXIT_FAILED)
    if check and done.rc != 0:
        why = (done.err.strip().splitlines() or [f"exit {done.rc}"])[-1]
        raise Error(f"git {' '.join(args[:3])} in {repo}: {why}", EXIT_FAILED)
    return done.out.strip() if done.rc == 0 else ""


def is_git_tree(tree: Path) -> bool:
    """True for the top of a git work tree (a clone or a `git worktree`)."""
    return (tree / ".git").exists()


def resolve(tree: Path, ref: str) -> str:
    """The commit id `ref` names in `tree`; Error (exit 2) when it names none."""
    if ref.startswith("-"):
        raise Error(f"{ref!r} is not a git ref")
    out = git(tree, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}",
              check=False)
    if not out:
        raise Error(f"--tree {tree}: no commit named {ref!r} (with a git tree, names are its"
                    " refs)")
    return out


def describe(tree: Path, commit: str) -> str:
    """`git describe` of a commit (tags, else the short id)."""
    return git(tree, "describe", "--tags", "--always", commit, check=False) or commit[:12]


def subject(tree: Path, commit: str) -> str:
    return git(tree, "log", "-1", "--format=%s", commit, check=False)


def first_parent_range(tree: Path, good: str, bad: str) -> list[str]:
    """The commits after `good` up to and including `bad`, oldest first, along bad's first
    parents (a merge is one step). Error (exit 2) unless good is an ancestor of bad."""
    if good == bad:
        raise Error("GOOD and BAD are the same commit: nothing to bisect")
    done = proc.run(["git", "-C", str(tree), "merge-base", "--is-ancestor", good, bad],
                    GIT_TIMEOUT_S, capture=True)
    if done.rc != 0:
        raise Error(f"{good[:12]} is not an ancestor of {bad[:12]}: GOOD must come before BAD")
    out = git(tree, "rev-list", "--first-parent", "--reverse", f"{good}..{bad}")
    commits = out.split()
    if not commits or commits[-1] != bad:
        # BAD's first-parent line does not pass through GOOD (GOOD came in by a merge).
        raise Error(f"{bad[:12]}'s first-parent history does not reach {good[:12]}; bisect "
                    "between commits of one line of history")
    return commits


def version_at(tree: Path, commit: str) -> str:
    """The kernel version a commit's top Makefile says, e.g. 6.12.117."""
    fields = {}
    for line in git(tree, "show", f"{commit}:Makefile").splitlines()[:12]:
        key, _, value = line.partition("=")
        fields[key.strip()] = value.strip()
    try:
        return (f"{fields['VERSION']}.{fields['PATCHLEVEL']}.{fields['SUBLEVEL']}"
                f"{fields.get('EXTRAVERSION', '')}")
    except KeyError:
        raise Error(f"{commit[:12]}: its Makefile names no kernel version", EXIT_FAILED) from None


def repo_key(tree: Path) -> str:
    """One key per repository, whichever of its work trees the user names."""
    common = git(tree, "rev-parse", "--path-format=absolute", "--git-common-dir")
    return hashlib.sha256(str(Path(common).resolve()).encode()).hexdigest()[:16]


def lab_clone(tree: Path, work: Path) -> Path:
    """The lab's clone of the user's repository (made once): a shared clone with no checkout
    until the first build asks for a commit."""
    clone = work / "src"
    if (clone / ".git").is_dir():
        return clone
    if proc.would_run(["git", "clone", "--shared", "--no-checkout", str(tree), str(clone)]):
        return clone
    work.mkdir(parents=True, exist_ok=True)
    tmp = work / "src.tmp"
    if tmp.exists():
        proc.run(["rm", "-rf", str(tmp)], GIT_TIMEOUT_S)
    log(f"cloning {tree} into {clone} (shared objects; once per repository)")
    git(work, "clone", "--quiet", "--shared", "--no-checkout", str(tree), str(tmp))
    tmp.rename(clone)
    return clone


def checkout(clone: Path, commit: str) -> str:
    """Put the lab's clone at `commit`, exactly: local edits (patches applied for a previous
    build) are thrown away and files they created removed. Returns a note for the log."""
    if proc.would_run(["git", "-C", str(clone), "checkout", "--force", "--detach", commit]):
        return ""
    # A clone made with --no-checkout has a HEAD but no index: nothing is checked out yet.
    before = (git(clone, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
              if (clone / ".git" / "index").exists() else "")
    # The objects are the user's: a commit made there since the clone is already visible.
    # (A forced checkout needs nothing of the commit checked out before, which the user may
    # have rewritten and pruned.)
    git(clone, "checkout", "--quiet", "--force", "--detach", commit)
    git(clone, "clean", "--quiet", "-d", "--force")
    if before == commit:
        return f"checked out {commit[:12]} (again)"
    if not before:
        return f"checked out {commit[:12]} (first checkout: a full build)"
    try:
        changed = git(clone, "diff", "--name-only", before, commit).splitlines()
    except Error:       # the commit checked out before is gone (history rewritten, pruned)
        return f"checked out {commit[:12]}"
    return f"checked out {commit[:12]}; {len(changed)} files differ from {before[:12]}"
