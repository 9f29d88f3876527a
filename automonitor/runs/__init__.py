"""Step 2, monitor runs: a monitor judges the store's samples and its verdicts are stored (backends,
prompts, parser, runner, batch, imported predictions, generation, probes). The modules and their layers:
docs/explanation/architecture.md. Runs read :mod:`automonitor.data` and the store; they never import
analysis, annotation or views.
"""

__all__: list[str] = []
