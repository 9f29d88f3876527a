"""The app's Streamlit helpers shared by the pages (``data``: engine and cached loaders, ``url_state``: the
selection in the URL, ``auth``: logins and page guards, ``nav``: ``st.Page`` objects and the navigation guard,
``widgets``: escaped rendering, and the pieces of single pages: ``derived_ui``, ``generation_ui``,
``launch_form``, ``plot_size``, ``spans_ui``).

They live in this package, not as files directly under ``pages/``: a ``pages/`` folder beside ``app.py`` puts
Streamlit in its legacy multipage mode, whose first script run lists every ``.py`` file directly under
``pages/`` (not a sub-folder) in the sidebar until ``app.py``'s ``st.navigation`` replaces the menu; a helper
there showed as a page ("auth", "data", ...) for seconds on a slow first load and said "Page not found" when
clicked. Every file directly under ``pages/`` is a page (``tests/app/test_page_extension.py``).
"""

__all__: list[str] = []
