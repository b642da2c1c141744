"""memvault: a persistent memory for LLMs that a person can read, edit and audit."""

__version__ = "0.1.0"
