"""Drive headless Chromium over the DevTools protocol on a pipe (no port, no extra package).

    with HeadlessChromium() as browser:
        page = browser.open("file:///.../report.html")
        page.evaluate("document.title")
        page.screenshot(Path("shot.png"))
        page.console_errors   # console.error calls, uncaught exceptions, failed loads

Chromium reads protocol messages from fd 3 and writes to fd 4 (--remote-debugging-pipe); each
message is one JSON object followed by a NUL byte.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    for name in BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class ProtocolError(RuntimeError):
    pass


class HeadlessChromium:
    def __init__(self, binary: str | None = None, *, width: int = 1280, height: int = 900, timeout_s: float = 60.0):
        self.binary = binary or find_chromium()
        if not self.binary:
            raise FileNotFoundError("no chromium binary on PATH")
        self.size = (width, height)
        self.timeout_s = timeout_s
        self._next_id = 0
        self._buffer = b""
        self.events: list[dict] = []

    def __enter__(self):
        self.profile_dir = tempfile.mkdtemp(prefix="chromium-profile-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        args = [self.binary, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={self.profile_dir}", f"--window-size={self.size[0]},{self.size[1]}",
                "about:blank"]

        def wire_fds():  # in the child: the protocol pipes become fds 3 and 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, preexec_fn=wire_fds, pass_fds=(3, 4))
        os.close(to_browser_r)
        os.close(from_browser_w)
        return self

    def __exit__(self, *exc):
        try:
            self.send("Browser.close")
        except (OSError, ProtocolError, TimeoutError):  # already gone: only the cleanup below is left
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile_dir, ignore_errors=True)

    # ------------------------------------------------------------------ protocol plumbing
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise ProtocolError("chromium closed the protocol pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise ProtocolError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for_event(self, method: str, session: str | None = None) -> dict:
        deadline = time.monotonic() + self.timeout_s
        for i, event in enumerate(self.events):
            if event.get("method") == method and (session is None or event.get("sessionId") == session):
                return self.events.pop(i)
        while True:
            event = self._read_message(deadline)
            if event.get("method") == method and (session is None or event.get("sessionId") == session):
                return event
            self.events.append(event)

    def open(self, url: str) -> "Page":
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": self.size[0], "height": self.size[1],
                                                          "deviceScaleFactor": 1, "mobile": False}, session)
        self.send("Page.navigate", {"url": url}, session)
        self.wait_for_event("Page.loadEventFired", session)
        return page


class Page:
    def __init__(self, browser: HeadlessChromium, session: str):
        self.browser = browser
        self.session = session

    def evaluate(self, expression: str):
        result = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                        "awaitPromise": True}, self.session)
        if "exceptionDetails" in result:
            raise ProtocolError(f"{expression!r} raised: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        params = {"format": "png"}
        if full_page:
            size = self.browser.send("Page.getLayoutMetrics", session=self.session)["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        data = self.browser.send("Page.captureScreenshot", params, self.session)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def _events(self, *methods: str) -> list[dict]:
        self.browser.send("Runtime.evaluate", {"expression": "0"}, self.session)  # drain pending events
        return [e for e in self.browser.events if e.get("sessionId") == self.session and e.get("method") in methods]

    @property
    def console_errors(self) -> list[str]:
        errors = []
        for event in self._events("Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded"):
            p = event["params"]
            if event["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append(" ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif event["method"] == "Runtime.exceptionThrown":
                errors.append(p["exceptionDetails"].get("exception", {}).get("description")
                              or p["exceptionDetails"].get("text", "exception"))
            elif event["method"] == "Log.entryAdded" and p["entry"].get("level") == "error":
                errors.append(f"{p['entry'].get('source')}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return errors

    @property
    def requested_urls(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self._events("Network.requestWillBeSent")]
