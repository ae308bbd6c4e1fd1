from dataclasses import dataclass

from agents.plugin import between, ranged


@dataclass
class KeywordGateSettings:
    # how many of the question's words the best chunk must hold before the VLM is asked
    min_overlap: int = ranged(2, between(1, 5))
