"""Coarse to fine in CRUISE's rerank stage (`rerank_coarse_k`): a bi-encoder shortlists each
turn's chunks, and the cross-encoder (the tiny random XLM-R of testkit/tiny_models.py) scores only
those; the MAD filter and K_rerank read its scores."""
from __future__ import annotations

import pytest

from agents.config.loading import load_config
from agents.engines.reranker import CrossEncoderReranker
from agents.stages.s5_rerank import mad_threshold, rerank_batch
from agents.stages.types import Retrieval
from testkit.fakes import FunctionReranker
from testkit.tiny_models import build_tiny_xlmr_reranker

TOWER = [f"The tower fact number {n}: it stands {n * 7} metres above the river in the old town." for n in range(9)]
BREAD = ["Sourdough rises slowly overnight.", "Rye bread keeps for a week.", "Baguettes are baked twice a day."]
# The bi-encoder's scores (outside the unit: a plain function); the shortlist is known in advance.
COARSE = {**{chunk: 0.05 * n for n, chunk in enumerate(TOWER)}, BREAD[0]: 0.3, BREAD[1]: 0.9, BREAD[2]: 0.6}


class SeenPairs(CrossEncoderReranker):
    """The real cross-encoder, which also remembers the pairs it was asked to score."""

    def __init__(self, model):
        super().__init__(model)
        self.seen: list[tuple[str, str]] = []

    def _score(self, pairs):
        self.seen += pairs
        return super()._score(pairs)


@pytest.fixture(scope="module")
def cross_encoder():
    return SeenPairs(build_tiny_xlmr_reranker())


def retrievals() -> list[Retrieval]:
    # chunk order is not coarse order: the best coarse chunks of the first turn are its last ones
    return [Retrieval(query="How tall is the tower in this photo?", chunks=TOWER, chunk_sources=["kg"] * len(TOWER)),
            Retrieval(query="Which bread keeps longest?", chunks=BREAD, chunk_sources=["web"] * len(BREAD))]


def test_the_cross_encoder_scores_only_the_k_chunks_the_bi_encoder_ranks_best(cross_encoder):
    cfg = load_config("cpu", "full", rerank_coarse_k=4, k_rerank=2)
    cross_encoder.seen.clear()
    tower, bread = rerank_batch(retrievals(), cross_encoder, cfg, FunctionReranker(lambda q, c: COARSE[c]))
    shortlist = TOWER[5:]  # coarse .25 .30 .35 .40: the four best of nine
    assert sorted(cross_encoder.seen) == sorted([(retrievals()[0].query, c) for c in shortlist]
                                                + [(retrievals()[1].query, c) for c in BREAD])
    # each shortlisted chunk carries its own cross-encoder score; the others none
    alone = dict(zip(shortlist, cross_encoder.score([(retrievals()[0].query, c) for c in shortlist])))
    assert tower.chunk_scores == [None] * 5 + [pytest.approx(alone[c], abs=1e-6) for c in shortlist]
    assert tower.coarse_scores == [COARSE[c] for c in TOWER]
    # the MAD filter and K_rerank over the cross-encoder's scores of the shortlist
    assert tower.theta == pytest.approx(mad_threshold(alone.values(), cfg.retrieval.mad_tau, cfg.retrieval.mad_lambda,
                                                      cfg.retrieval.mad_top_k))
    assert tower.kept == sorted(shortlist, key=lambda c: -alone[c])[:2]
    assert tower.retrieval_score == pytest.approx(max(alone.values()), abs=1e-6)
    # a turn with fewer chunks than k: all of them, in chunk order
    assert None not in bread.chunk_scores and len(bread.chunk_scores) == 3


def test_off_by_default_every_chunk_is_scored_and_no_bi_encoder_is_asked(cross_encoder):
    cfg = load_config("cpu", "full")
    assert load_config("l40s").retrieval.rerank_coarse_k == 0
    cross_encoder.seen.clear()

    def never(query, chunk):
        raise AssertionError("the bi-encoder was asked with the coarse step off")

    tower, _ = rerank_batch(retrievals(), cross_encoder, cfg, FunctionReranker(never))
    assert len(cross_encoder.seen) == len(TOWER) + len(BREAD)
    assert None not in tower.chunk_scores and tower.coarse_scores == []


def test_the_trace_shows_what_the_coarse_step_kept():
    from agents.cruise_agent import CruiseAgent
    from agents.engines.base import Engines
    from testkit.fakes import FakePipeline, ScriptedEngine
    from testkit.scripted_chain import IMAGE_HITS, VLM_SCRIPT, WHERE, batch, route

    coarse = {"Route 24 runs from Pimlico to Camden.": 0.8, "It uses red double-decker buses.": 0.4}
    engines = Engines(router=ScriptedEngine({"route": route}), vlm=ScriptedEngine(VLM_SCRIPT),
                      reranker=FunctionReranker(lambda query, chunk: 0.9),
                      coarse=FunctionReranker(lambda query, chunk: coarse[chunk]))
    agent = CruiseAgent(FakePipeline(IMAGE_HITS), engines=engines, profile="cpu", preset="full+paper_finalizer",
                        chunker="paper_fields", rerank_coarse_k=1)
    agent.batch_generate_response(*batch([WHERE]))
    (trace,) = agent.last_batch_report["traces"]
    assert trace["coarse_kept"] == 1
    assert [(c["text"], c["coarse_score"], c["score"]) for c in trace["chunks"]] == [
        ("Route 24 runs from Pimlico to Camden.", 0.8, 0.9), ("It uses red double-decker buses.", 0.4, None)]
    assert trace["kept_chunks"] == ["Route 24 runs from Pimlico to Camden."]
