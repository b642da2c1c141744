"""CLI commands, one small module per group; importing this package registers them all, in this
order (--help and the man page list them so): `add list show edit rm` first."""

# isort: off
from memvault.cli.commands import entries  # noqa: F401
# isort: on
from memvault.cli.commands import (  # noqa: F401
    chat,
    config,
    doctor,
    erase,
    history,
    index,
    init,
    llm,
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
