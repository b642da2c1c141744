"""Forgetting: `erase` (selection, the history rewrite run by `history_filter`, git's cleanup),
`scrub` (sentences quoting an erased text), `state_purge` (.memvault/ records), `intent` (an erase cut
short), `record` (the erasure record and its one reader), and `eviction` (what `gc` removes). Built
on vault.format and vault.git."""
