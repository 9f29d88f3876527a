"""Trained monitors: :mod:`~automonitor.runs.probe.corpus` (training/test texts from the store, disjoint by
family), :mod:`~automonitor.runs.probe.model` (TF-IDF / embedding features, a linear head, JSON artefacts
with a sha256-checked card), :mod:`~automonitor.runs.probe.lora` (a LoRA-tuned local judge). The probe and
LoRA backends in :mod:`automonitor.runs.monitors` load what these train."""

__all__: list[str] = []
