"""Loopback HTTP servers that answer as a test says, for the served engines' tests: they stand in
for the OpenAI-compatible servers (vLLM, SGLang) that cannot run on this machine, in the shapes read
from their source (tests/test_served_engine.py names where). The fixture `loopback`
(tests/conftest.py) starts them and stops them after the test.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Loopback:
    """A threaded HTTP server on a free port; `answer(handler, path, body) -> (status, headers, json)`."""

    def __init__(self, answer):
        self.requests: list[tuple[str, dict, dict]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, method):
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if method == "POST" else {}
                outer.requests.append((self.path, dict(self.headers), body))
                status, headers, payload = answer(self.path, body, len(outer.requests))
                data = json.dumps(payload).encode()
                self.send_response(status)
                for key, value in {"content-type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._reply("GET")

            def do_POST(self):
                self._reply("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        # a short poll: shutdown() waits up to one poll interval
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def chat_answer(tokens, logprobs, text, finish):
    """A chat completion in vLLM's shape with `finish` merged into its choice (SGLang's differs
    only there: `matched_stop` instead of `stop_reason`)."""
    def answer(path, body, count):
        content = [{"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
                   for t, lp in zip(tokens, logprobs)]
        choice = {"index": 0, "message": {"role": "assistant", "content": text},
                  "logprobs": {"content": content} if body.get("logprobs") else None, **finish}
        return 200, {}, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [choice],
                         "usage": {"prompt_tokens": 9, "completion_tokens": len(tokens), "total_tokens": 9 + len(tokens)}}
    return answer
