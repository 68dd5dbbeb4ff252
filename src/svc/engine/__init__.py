"""The engine: planning (pure), execution (the only caller of plugins), commands and their states."""
