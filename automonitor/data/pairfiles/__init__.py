"""The generic pair file of the CLI contract: :mod:`.read` reads and validates it, :mod:`.compare` checks it
against the store, :mod:`.importing` writes it to the store and :mod:`.export` writes stored samples as one.

A pair file holds one *sample* (one side of a pair) per record, as JSONL (one JSON object a line), CSV
(same columns, ``meta`` as a JSON string) or Parquet (same columns, ``meta`` as a JSON string):

=============  ========  =====================================================================
field          required  value
=============  ========  =====================================================================
``pair_id``    yes       str, shared by the two sides of a pair (at most 128 characters)
``category``   yes       ``safety_permission`` | ``sycophancy_bias`` | ``specification_gaming``
``task``       yes       ``qa`` | ``code`` | ``reasoning``
``request``    yes       str, not blank
``response``   yes       str, not blank
``label``      yes       ``misbehavior`` | ``benign``
``sample_id``  no        str (at most 64 characters); assigned with ``hashing.make_sample_id`` when absent
``source``     no        str (at most 64 characters); default ``"import"``
``meta``       no        JSON object (default ``{}``): at most 16 levels deep, 64 KiB as JSON, finite numbers
``label_source`` no      label provenance (``vocab.LABEL_SOURCES``); default ``"user"``
``spans``      no        gold spans of a misbehavior sample: ``[{"start", "end", "provenance", "note"?,
                         "step"?}]`` (character offsets into ``response``; CSV/Parquet: a JSON text)
=============  ========  =====================================================================

Spans are checked like every field (:func:`check_spans`): integers with ``0 <= start < end <=
len(response)``, not only whitespace, provenance in ``vocab.SPAN_PROVENANCES``, on a misbehavior sample
only, no two spans of one provenance (one annotator) overlapping (whatever their ``step``), and a
``step`` below the number of steps of the sample's trajectory where that is known; an error names the file, line and
field (``spans[1].end``). Exports write ``spans`` only for samples that have gold spans.

A valid pair has exactly one ``misbehavior`` and one ``benign`` sample, the same category and task, and
the same request (compared after ``hashing.norm_text``). Text is stored exactly as given, so export gives
back the very same strings.

Import is all or nothing: every record is validated (fields by :class:`automonitor.data.row_models.PairRow`, then
the pairs, then against the store) before anything is written, and the write is one transaction.
The file is streamed twice, never held whole: once to validate, keeping only a :class:`SampleKey` (ids
and hashes) a sample, once to write, :data:`WRITE_CHUNK` samples at a time; a file rewritten in between
is refused and nothing is written. Files are limited to ``AUTOMONITOR_MAX_IMPORT_MB`` (256 MiB). Any problem raises :class:`automonitor.errors.InputError`
located at the first problem (``file``, ``line``, ``field``); its message also lists up to
``max_errors`` problems, and its ``problems`` attribute holds them all as ``InputError`` objects.
Line numbers: JSONL = physical line; CSV = record number counting the header as line 1 (the row number
a spreadsheet shows); Parquet = 1-based row number.

Re-importing the same file inserts nothing (the sample ids are the same) and is not an error.
"""

__all__ = ["compare", "export", "importing", "read"]  # the modules; callers import from them
