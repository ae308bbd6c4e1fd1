"""Fixtures shared by several test files."""
from __future__ import annotations

import pytest

from tests.browser import HeadlessChromium, find_chromium


@pytest.fixture(scope="module")
def browser():
    if not find_chromium():
        pytest.skip("chromium is not installed: scripts/test.sh installs it (apt-get install chromium); "
                    "the browser checks of report.html did not run")
    with HeadlessChromium() as chromium:
        yield chromium


# The paper's CoV reading and finalizer, for the tests whose scripted engines write the paper's
# "CONFIDENCE: x" reply: the cpu profile's own verifier (grounding, calibrated thresholds) is
# tested in test_cruise_units.py and by the end-to-end runs.
PAPER_FINALIZER = dict(cov_mode="text", tau_ret_scope="real_time", tau_ret=0.5, tau_low=0.9, tau_high=1.0,
                       min_token_prob=0.0)


@pytest.fixture
def paper_finalizer_on_cpu(monkeypatch):
    from agents import config

    monkeypatch.setitem(config.PROFILES, "cpu", {**config.PROFILES["cpu"], **PAPER_FINALIZER})
