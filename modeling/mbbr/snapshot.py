"""The snapshot format of a model's state: named arrays plus a JSON header, in a .npz file.

A snapshot holds everything of an MBBR model that its observations changed and nothing a fresh
build from the same configuration recreates, so restoring one taken after hand s and replaying
hands s + 1, ... gives the bits of replaying every hand (tested for every posterior and prior).
Layout: a ZIP archive (stored, every entry dated 1980-01-01: the same state gives the same bytes)
of NumPy ``.npy`` arrays, readable with ``numpy.load`` and no pickle:

- ``meta``: a 0-d unicode array holding JSON: ``format``, ``version``, ``posterior``,
  ``num_players``, ``hands_observed``, ``config`` (every MBBRConfig field; one of
  ``config.FIELDS_ADDED_LATER`` left out at the value its absence means, so earlier headers
  still match), ``prior_mean_sha256`` (the prior mean's float64 bytes) and ``game_sha256`` (the
  rules' text). A restore refuses a header that does not match its model (:func:`decode_snapshot`;
  the retired Kuhn-only models' have no ``game_sha256``: the service rebuilds those from hands).
- the arrays, named in ``MBBRModel.snapshot`` (with change detection, header ``runs: bocpd``,
  ``ChangeDetectingModel._state``'s) and the bankroll's.

A change of what is stored is a new ``VERSION``; a reader refuses a version it does not know
(``SnapshotError``) and the caller rebuilds by full replay instead.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

FORMAT = "oppmodel.mbbr-snapshot"
VERSION = 1
_DATE = (1980, 1, 1, 0, 0, 0)


class SnapshotError(ValueError):
    """A snapshot that cannot be restored here (another format, version, model, or damaged)."""


def encode(meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> bytes:
    """The snapshot bytes of a header and named arrays (``FORMAT`` and ``VERSION`` added)."""
    header = {"format": FORMAT, "version": VERSION, **meta}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, array in {"meta": np.array(json.dumps(header)), **arrays}.items():
            with archive.open(zipfile.ZipInfo(f"{name}.npy", _DATE), "w") as entry:
                np.lib.format.write_array(entry, np.asarray(array), allow_pickle=False)
    return out.getvalue()


def decode(blob: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(header, arrays) of snapshot bytes; SnapshotError unless it is this format and version."""
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        header = json.loads(str(arrays.pop("meta")))
    except Exception as exc:  # not a .npz, no header, a damaged entry: all mean "cannot use"
        raise SnapshotError(f"not a readable snapshot ({type(exc).__name__}: {exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise SnapshotError(f"not an {FORMAT} snapshot")
    if header.get("version") != VERSION:
        raise SnapshotError(f"snapshot version {header.get('version')!r}; this reads {VERSION}")
    return header, arrays


def take(
    arrays: Mapping[str, np.ndarray], name: str, kind: str, shape: tuple[int | None, ...]
) -> np.ndarray:
    """``arrays[name]`` (a writable copy), checked to be of dtype ``kind`` ("f8", "i8", or "U"
    for text) and ``shape`` (None: any length on that axis); SnapshotError if not."""
    if name not in arrays:
        raise SnapshotError(f"snapshot has no array {name!r}")
    array = arrays[name]
    kind_ok = array.dtype.kind == "U" if kind == "U" else array.dtype == np.dtype(kind)
    shape_ok = len(array.shape) == len(shape) and all(
        want is None or got == want for got, want in zip(array.shape, shape, strict=True)
    )
    if not (kind_ok and shape_ok):
        raise SnapshotError(f"snapshot array {name!r} is {array.dtype}{array.shape}, not {kind}")
    return np.array(array)


def section(arrays: Mapping[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """The arrays whose names start with ``prefix``, by the rest of their names."""
    return {name.removeprefix(prefix): a for name, a in arrays.items() if name.startswith(prefix)}


def decode_snapshot(blob: bytes, identity: dict) -> tuple[int, dict[str, np.ndarray]]:
    """(hands observed, arrays) of a snapshot whose header agrees with ``identity`` (what
    ``MBBRModel._snapshot_identity`` gives for the model it is restored into); SnapshotError if
    not."""
    meta, arrays = decode(blob)
    differ = [key for key in identity if meta.get(key) != identity[key]]
    if differ:
        raise SnapshotError(f"snapshot of a model with other settings ({', '.join(differ)})")
    hands = meta.get("hands_observed")
    if not isinstance(hands, int) or hands < 0:
        raise SnapshotError(f"snapshot hands_observed {hands!r}")
    return hands, arrays
