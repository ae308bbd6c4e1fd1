"""An agent of no settings of its own that answers slowly (a second a batch)."""
import time

from agents.base_agent import BaseAgent


class SlowAgent(BaseAgent):
    def get_batch_size(self) -> int:
        return 2

    def batch_generate_response(self, queries, images, message_histories):
        time.sleep(1.0)
        return ["I don't know" for _ in queries]
