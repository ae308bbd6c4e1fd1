"""keyword_gate as a System: the shared retrieval, its two stages, its rule and its settings."""
from agents.plugin import IDK_ANSWER, RETRIEVE, System, register
from keyword_gate.settings import KeywordGateSettings
from keyword_gate.stages import ANSWER, OVERLAP


def decide(signals, cfg):
    """Keep the answer only where the evidence held enough of the question's words."""
    if (signals.get("overlap") or 0) >= cfg.own.min_overlap:
        return signals["rag_answer"]
    return IDK_ANSWER


KEYWORD_GATE = register(System(name="keyword_gate", stages=(RETRIEVE, OVERLAP, ANSWER), decide=decide,
                               settings=KeywordGateSettings))
