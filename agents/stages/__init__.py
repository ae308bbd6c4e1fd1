"""The stages more than one system runs, one file per stage (`sN_name.py`, each a function over a
batch and its `STAGE` record), and what they share: the dataclasses that flow between them
(types.py), the prompts (prompts.py), the readers of model output (parsing.py, verdicts.py) and
the page text the chunker reads (pagetext.py, wikitext.py). A system's own steps live in its own
package (agents/cruise/, agents/peers/qa_dragon/, agents/peers/sam_rag/)."""
