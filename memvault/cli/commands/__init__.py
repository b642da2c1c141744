"""CLI commands, one small module per group; importing this package registers them all."""

from memvault.cli.commands import (  # noqa: F401
    chat,
    config,
    doctor,
    entries,
    erase,
    history,
    index,
    init,
    log,
    maintenance,
    mcp,
    remote,
    search,
    semantic,
    serve,
    session,
    sync,
    transfer,
    ui,
    workspace,
)
