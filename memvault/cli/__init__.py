"""The command-line interface: a thin layer over memvault.core."""
