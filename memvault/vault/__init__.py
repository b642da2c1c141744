"""The vault: markdown files in a git repository, in parts (docs/architecture.md, "The vault's parts"):
format (the files), git (the plumbing), write (the Vault and its transactions), forget (erasure,
eviction) and devices (sync between devices). Text judgement is memvault.text. Nothing is imported
here: a command loads only the parts it uses."""
