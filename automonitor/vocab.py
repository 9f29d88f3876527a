"""The fixed vocabulary of ``../shared/CONTRACT.md``: string keys used in the DB, CLI, JSON and exports."""

from __future__ import annotations

CATEGORIES: tuple[str, ...] = ("safety_permission", "sycophancy_bias", "specification_gaming")
TASKS: tuple[str, ...] = ("qa", "code", "reasoning")
LABELS: tuple[str, ...] = ("misbehavior", "benign")  # gold label; misbehavior is the positive class
POSITIVE = "misbehavior"
NEGATIVE = "benign"
UNSCORED: tuple[str, ...] = ("invalid", "refusal", "error")
OUTCOMES: tuple[str, ...] = LABELS + UNSCORED  # a monitor's outcome on one sample
TEMPLATES: tuple[str, ...] = (
    "direct",
    "evidence",
    "direct-fewshot",
    "evidence-fewshot",
    "paper-direct",
    "paper-evidence",
)
SPLITS: tuple[str, ...] = ("test", "train")
# Label provenance (CONTRACT round 2): how a pair's label is known
LABEL_SOURCES: tuple[str, ...] = (
    "human_per_response",
    "by_construction",
    "patch_pair",
    "preference_pair",
    "instructed_demo",
    "adjudicated",
    "user",
)
EDITIONS: tuple[str, ...] = ("paper", "verified", "hard")
STATUSES: tuple[str, ...] = ("gold", "candidate", "rejected")
ANNOTATION_LABELS: tuple[str, ...] = ("misbehavior", "benign", "unsure")
ROLES: tuple[str, ...] = ("annotator", "admin")
RUN_STATUSES: tuple[str, ...] = ("pending", "running", "finished", "failed", "cancelled", "imported")
INVALID_POLICIES: tuple[str, ...] = ("exclude", "as-flag", "as-miss")

CATEGORY_NAMES: dict[str, str] = {
    "safety_permission": "Safety & Permission Violations",
    "sycophancy_bias": "Sycophancy & Bias",
    "specification_gaming": "Specification Gaming",
}
TASK_NAMES: dict[str, str] = {"qa": "QA", "code": "Code", "reasoning": "Reasoning"}

# The paper's test-set composition (samples, i.e. two per pair): ../shared/paper/README.md
PAPER_QUOTAS: dict[str, int] = {
    "safety_permission": 1172,
    "sycophancy_bias": 962,
    "specification_gaming": 876,
}
