"""Serve the workbench: ``python scripts/serve.py [streamlit options]`` = ``streamlit run app.py``, with
Streamlit's legacy ``pages/``-directory mode switched off before the first session.

Streamlit decides per process whether a ``pages/`` folder beside the entry script means "legacy
multipage app"; until some session has executed ``app.py`` (which calls ``st.navigation``), the first
request for e.g. ``/tradeoff`` on a fresh server would run that page file directly and briefly show
the raw page list. The pages guard against that themselves (``ui.ensure_navigation``); this launcher
avoids the detour altogether.
"""

import sys
from pathlib import Path

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli

if __name__ == "__main__":
    PagesManager.uses_pages_directory = False
    app = str(Path(__file__).resolve().parents[1] / "app.py")
    sys.argv = ["streamlit", "run", app, *sys.argv[1:]]
    sys.exit(cli.main())
