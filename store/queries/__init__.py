"""Query helpers over the store, one module per area (samples, runs, annotation)."""
