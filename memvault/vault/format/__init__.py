"""What the vault's files are: an entry and its fields (`entry`, `fields`), its markdown file
(`markdown`), where each file lives and which names are safe (`layout`), finding and reading files
safely (`listing`, `reading`), writing one atomically (`atomic`) and the state files' JSON lines
(`jsonlines`). Below git: nothing here runs git."""
