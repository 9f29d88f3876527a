"""Step 2, monitor runs: a monitor judges the store's samples and its verdicts are stored.

- :mod:`~automonitor.runs.monitors`: one file per backend (OpenAI-compatible, Anthropic, llama.cpp, rules,
  probe, LoRA), registered by decorator, each with its defaults, key variable, parameters and token
  estimate on its class; :mod:`~automonitor.runs.prompts`: templates and few-shot choice;
- :mod:`~automonitor.runs.parsing`: judge answers -> verdicts (an error or an unreadable answer is never a
  verdict); :mod:`~automonitor.runs.verdicts`: the verdict record shared by the runner and batch;
- :mod:`~automonitor.runs.runner`: create, execute (leased, cached, resumable, rate-limit aware),
  :mod:`~automonitor.runs.batch`: providers' batch endpoints; :mod:`~automonitor.runs.sampling`;
- :mod:`~automonitor.runs.prediction_files`: imported predictions; :mod:`~automonitor.runs.generation`:
  generating candidate pairs in the sandbox; :mod:`~automonitor.runs.probe`: trained probes and LoRA
  judges (features, training, artefacts) that the probe and LoRA backends load.

Runs read :mod:`automonitor.data` and the store; they never import analysis, annotation or views.
"""

__all__: list[str] = []
