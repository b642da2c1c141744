"""Text judgement, below every layer that stores text: how two texts' words compare (`wording`:
the grounding guard, triples, the graph) and where a text's secrets are and how they are redacted
(`redact`, with `secret_finder`, `secret_tokens`, `secret_keywords`). Pure functions of text; it imports
only memvault.errors. Curation uses it, but cannot own it: the vault's write path redacts every text
and the index's graph checks triples, and both sit below curate."""
