"""The browser the e2e tests share: Debian's chromium driven by playwright."""
from __future__ import annotations

import pytest

from tests.e2e.test_browser import CHROMIUM, CHROMIUM_ARGS

@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()
