"""An agent that answers too slowly, for the preflight's budget check."""
import time

from agents.base_agent import BaseAgent


class SlowAgent(BaseAgent):
    def get_batch_size(self) -> int:
        return 2

    def batch_generate_response(self, queries, images, message_histories):
        time.sleep(1.0)
        return ["I don't know" for _ in queries]
