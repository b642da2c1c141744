"""`memvault init`: create a vault (idempotent)."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from memvault.cli.base import command
from memvault.cli.options import ConfigOpt, JsonOpt, VaultOpt
from memvault.cli.output import print_json, say


@command("init")
def init(
    path: Annotated[Optional[Path], typer.Argument(help="Where to create the vault (default: --vault or the default).",
                                                   show_default=False)] = None,
    use_enclosing_repo: Annotated[bool, typer.Option(
        "--use-enclosing-repo", help="When PATH lies inside another git repository, commit into that repository "
        "instead of making one at PATH.")] = False,
    remote: Annotated[Optional[str], typer.Option(
        "--remote", help="A git remote to sync with (as origin): what it holds is merged in, then ours pushed.",
        show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Create a vault: a folder of markdown files in a git repository of its own.

    Inside another git repository, a new vault gets its own repository unless --use-enclosing-repo is given;
    an existing vault keeps the repository it is in."""
    from memvault import settings as settings_module
    from memvault.core import Memvault

    settings = settings_module.load(config, {"vault.path": str(path or vault) if (path or vault) else None})
    memvault = Memvault.open(settings, create=True, use_enclosing_repo=use_enclosing_repo)
    memvault.ensure_core()  # core/USER.md ... : empty but explained, one commit
    memvault.ensure_merge_setup()  # .gitattributes and the merge drivers `memvault sync` merges with
    if remote:
        memvault.add_remote(remote)
        memvault.sync("origin")
    repo = memvault.repository()
    root = str(repo.root)
    if json:
        print_json({"vault": root, "repository": str(repo.work_dir), "enclosing_repository": repo.enclosing})
    else:
        say(f"Vault ready at {root}; its commits go to {repo.description}")
