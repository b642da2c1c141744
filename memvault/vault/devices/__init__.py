"""Many devices, one vault, through git (`memvault sync`; not memvault.index.catchup, which
follows the files with the index): a sync `round` (fetch, merge, push), the merge drivers (`merge`,
installed by `drivers`), what a merge leaves (`settle`), a remote tree no checkout can hold (`safety`),
adopting a history an erase rewrote (`adopt`), finishing a killed sync (`resume`), settling a core
file's kept-both lines (`keptboth`). The top of the vault: built on every other part."""
