"""The vault's git plumbing: the repository and its commits (`repository`, `fastcommit`), commit
messages and the log (`log`), push and pull (`remote`), starting git (`process`) and wording its
failures (`errors`); reading the past back (`history`, `timetravel`) and the commit map a history
rewrite leaves (`rewrites`). Built on vault.format."""
