"""Print the l40s profile's stage cost priors (agents/cruise/cost_priors.py) at the default
generation lengths: the table docs/engines.md shows.

Run: python -m tools.stage_cost_priors
"""
from __future__ import annotations

from agents.config import CruiseConfig
from agents.cruise.cost_priors import priors_table

if __name__ == "__main__":
    print(priors_table(CruiseConfig()))
