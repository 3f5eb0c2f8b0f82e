"""The CLI's commands, one module per area; each module lists its commands in COMMANDS."""
