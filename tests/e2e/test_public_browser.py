"""End to end, in Debian's headless Chromium: `python app.py --public` behind a login ($DEFSENT_AUTH) on a
tiny model. The login page comes first and a wrong password is refused; then two visitors (two browser
contexts, two sessions): one chooses another model, the other's model stays the server's."""
from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from core import Engine
from tests.e2e.test_browser import REPO, free_port, wait_until_up

pytestmark = pytest.mark.slow
USER, PASSWORD = "alice", "pass:with:colon"


@pytest.fixture(scope="module")
def public_url(tiny_mlm_dir, tmp_path_factory):
    work = tmp_path_factory.mktemp("public")
    checkpoint = Engine.from_base(str(tiny_mlm_dir)).save(work / "checkpoints" / "tiny-served", name="tiny-served")
    port = free_port()
    env = {**os.environ, "DEFSENT_CACHE_DIR": str(work / "cache"), "DEFSENT_THREADS": "1", "PYTHONUNBUFFERED": "1",
           "DEFSENT_AUTH": f"{USER}:{PASSWORD}"}
    env.pop("SPACE_ID", None)
    command = [sys.executable, "app.py", "--port", str(port), "--model", str(checkpoint), "--public",
               "--checkpoints", str(work / "checkpoints"), "--no-umap-warmup", "--single-token-words"]
    log = (work / "app.log").open("w")
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_up(url, process, work / "app.log")  # the login page answers
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_the_api_needs_the_login(public_url):
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(public_url + "gradio_api/info", timeout=60)
    assert refused.value.code == 401


def visitor(browser, url: str, password: str = PASSWORD):
    """A new browser context (its own cookies: its own session), logged in; its page."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(int(os.environ.get("E2E_TIMEOUT_MS", 300_000)))
    page.goto(url)
    page.get_by_label("username").fill(USER)
    page.get_by_label("password").fill(password)
    page.get_by_role("button", name="Login").click()
    return page


def test_a_wrong_password_is_refused(browser, public_url):
    page = visitor(browser, public_url, password="wrong")
    page.get_by_text("Incorrect Credentials").wait_for()
    assert page.locator("#model-status").count() == 0  # still the login form: no part of the app is shown
    page.context.close()


def test_one_visitors_model_choice_leaves_another_visitors_model_alone(browser, public_url):
    alice, bob = visitor(browser, public_url), visitor(browser, public_url)
    try:
        for page in (alice, bob):
            page.locator("#model-status").get_by_text("Active model: tiny-served").wait_for()
        assert "this session only" in alice.locator("#model-choice").inner_text()
        chooser = alice.locator("#model-choice input")
        chooser.click()
        alice.get_by_role("option", name="untrained base").click()
        alice.locator("#model-load").click()
        alice.locator("#model-status").get_by_text("Your model: untrained base").wait_for()
        bob.reload()
        bob.locator("#model-status").get_by_text("Active model: tiny-served").wait_for()
        assert "untrained" not in bob.locator("#model-status").inner_text()
    finally:
        alice.context.close()
        bob.context.close()


def test_an_upload_works_with_gradios_progress_route_closed(browser, public_url, tmp_path):
    """Session 49: public mode closes /gradio_api/upload_progress (it kept an entry for every id asked for) and drops
    an upload's progress id; the page's upload, which opens that stream, still uploads and validates."""
    from tests.e2e.test_browser import TINY_PAIRS, open_tab, wait_for_value

    dictionary = tmp_path / "my-words.tsv"
    dictionary.write_text("word\tdefinition\n" + "".join(f"{w}\t{d}\n" for w, d in TINY_PAIRS.items()),
                          encoding="utf-8")
    page = visitor(browser, public_url)
    try:
        page.locator("#model-status").wait_for()
        open_tab(page, "Fine-tune")
        page.locator("#ft-file input[type=file]").set_input_files(str(dictionary))
        wait_for_value(page, "#ft-report textarea", "v.includes('Ready')")
    finally:
        page.context.close()
