# SPDX-License-Identifier: MIT
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
GOLDEN = os.path.join(ROOT, "tests", "golden")
FAKE_ENGINE = os.path.join(FIXTURES, "fake-ipcbench")
REAL_ENGINE = os.path.join(ROOT, "bench", "ipcbench")


def fixture(name):
    return os.path.join(FIXTURES, name)


def check_golden(name, text):
    """Compare text with tests/golden/NAME; UPDATE_GOLDEN=1 rewrites it."""
    path = os.path.join(GOLDEN, name)
    if os.environ.get("UPDATE_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        want = f.read()
    assert text == want, "output differs from %s (UPDATE_GOLDEN=1 to accept)" % path


@pytest.fixture
def fake_engine(monkeypatch):
    monkeypatch.setenv("IPCBENCH", FAKE_ENGINE)
    monkeypatch.delenv("FAKE_SHIFT", raising=False)
    monkeypatch.delenv("FAKE_EXIT", raising=False)
    return FAKE_ENGINE
