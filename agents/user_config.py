"""The agent the evaluator loads: `from agents.user_config import UserAgent`."""
from agents.cruise_agent import CruiseAgent

UserAgent = CruiseAgent
