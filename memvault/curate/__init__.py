"""Curation: what an LLM decides about a turn before the vault stores it.

extract (latest user message -> facts) -> reconcile (facts vs nearest stored facts -> planned
ADD / UPDATE / DELETE / NONE) -> summary (rolling summary per conversation). Each step is pure code
around one LLM call through the `LLM` protocol (`llm.LLMClient` is the litellm one), and degrades
to "store what the user said" when the LLM fails. Submodules are imported directly; this package
imports nothing heavy.
"""
