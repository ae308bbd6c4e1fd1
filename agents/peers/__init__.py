"""The peer systems of our seed papers, run whole beside CRUISE on the same turns.

- `qa_dragon/`: QA-Dragon (seed 001, section 3 and Figure 1): a pre-answer (domain router, a
  domain-aware chain-of-thought draft), a search router with three branches (Direct Output,
  Search Verify, RAG), a tool router, the search agents, a coarse-to-fine reranker and a
  post-answer module that writes and verifies the final answer.
- `sam_rag/`: SAM-RAG (seed 002, Table 1 and its text): the photo aligned to text, retrieval,
  relevance (isRel) per document in rounds until one is relevant, generation, usefulness (isUse)
  with one regeneration, support (isSup).

Each is chosen by `CruiseConfig.system` (presets `qa_dragon`, `sam_rag`) and runs inside the same
CruiseAgent, batch guards and deadline as CRUISE (agents/cruise/chain.py `BatchRun`), reusing
CRUISE's stages where a step is the same thing. `registry.py` says which chain, decision rule,
funnel and report tables belong to which system. docs/chain.md describes both.
"""
