"""AutoMonitor-Bench core: data building, monitors, prompts, parsing, runner, metrics, agreement, CLI.

This package never imports Streamlit. The Streamlit app (``app.py`` and ``pages/``) calls into it.
"""

__version__ = "0.1.0"
