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
