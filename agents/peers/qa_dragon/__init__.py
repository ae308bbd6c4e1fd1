"""QA-Dragon (seed 001), run whole: see chain.py for its steps and docs/chain.md for where each
comes from in the paper."""
