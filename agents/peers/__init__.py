"""The peer systems of our seed papers, run whole beside CRUISE on the same turns.

- `qa_dragon/`: QA-Dragon (seed 001, section 3 and Figure 1): a pre-answer (domain router, a
  domain-aware chain-of-thought draft), a search router with three branches (Direct Output,
  Search Verify, RAG), a tool router, the search agents, a coarse-to-fine reranker and a
  post-answer module that writes and verifies the final answer.
- `sam_rag/`: SAM-RAG (seed 002, Table 1 and its text): the photo aligned to text, retrieval,
  relevance (isRel) per document in rounds until one is relevant, generation, usefulness (isUse)
  with one regeneration, support (isSup).

Each is a registered System (its package's system.py; agents/runtime/system.py), chosen by
`CruiseConfig.system` (presets `qa_dragon`, `sam_rag`), and runs inside the same CruiseAgent,
batch guards and deadline as CRUISE (agents/runtime/batch.py), reusing the shared stages
(agents/stages/) where a step is the same thing. The two packages import neither each other nor
CRUISE's. docs/chain.md describes both.
"""
