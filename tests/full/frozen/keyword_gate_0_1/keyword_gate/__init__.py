"""keyword_gate: answer a CRAG-MM question only where the best retrieved chunk shares enough of its words."""
