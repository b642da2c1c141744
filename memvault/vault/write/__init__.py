"""The write path: the Vault (`store`: opening, the write lock, transactions), a transaction's
file changes (`transaction`), putting back what a killed one changed (`recovery`), and a session's
scratchpad under .memvault/ (`scratchpad`). Built on vault.format and vault.git."""
