"""A release's metadata, shared by a release file (:mod:`~privelet_gui.io.releases`) and a Zarr
release folder (:mod:`~privelet_gui.io.zarr_releases`): what :func:`release_metadata` records
(see :mod:`~privelet_gui.io.releases`), and the checks that rebuild a release from it when a
file or folder is read (:func:`release_fields`): metadata that does not make a consistent
release is refused with a :class:`~privelet_gui.io.errors.ReleaseFileError` saying what is wrong.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..engine import BIT_SOURCE, NEIGHBOURS, READABLE_SAMPLERS, NoiseCalibration, PriveletError, Release, Schema
from ..engine.spec import MARGINALS, MECHANISMS, STRATEGIES, ReleaseSpec, axes_schema, mechanism_name
from ._json import is_finite_number, shown
from .errors import ReleaseFileError, UnverifiedReleaseWarning
from .schema import schema_from_json, schema_to_json

__all__ = [
    "RELEASE_FORMAT",
    "RELEASE_FORMAT_VERSION",
    "ReleaseWarning",
    "invalid_release",
    "post_processing",
    "release_fields",
    "release_from_metadata",
    "release_holding",
    "release_metadata",
    "release_warning",
]

RELEASE_FORMAT = "privelet-release"
RELEASE_FORMAT_VERSION = 1


def release_metadata(
    release: Release, *, seed: int | None = None, metadata: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON metadata stored with a release (see :mod:`~privelet_gui.io.releases`)."""
    schema = release.schema
    cal = release.calibration
    if schema is not None:
        bound = release.spec.paper_bound()
    else:  # Basic without a schema: 2 s^2 m / epsilon^2
        bound = 2.0 * cal.multiplicity**2 * release.noisy.size / release.epsilon**2
    if seed is not None and not release.seeded:
        raise PriveletError("a seed was given for a release made without one; pass the seed used to make it")
    if metadata is not None:
        try:
            json.dumps(metadata, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise PriveletError(f"release metadata must be plain JSON values: {exc}") from None
    return {
        "format": RELEASE_FORMAT,
        "format_version": RELEASE_FORMAT_VERSION,
        "software": "privelet-gui",
        "software_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "mechanism": release.mechanism,
        "epsilon": float(release.epsilon),
        "sa": list(release.sa),
        "strategies": list(release.strategies),
        "marginals": [[list(names), weight] for names, weight in release.marginals],
        "neighbours": release.neighbours,
        "rho": release.rho,
        "scale": float(release.scale),
        "nominal_scale": float(release.nominal_scale),
        "sampler": release.sampler,
        # a seeded release drew from the caller's generator, every other one from AES keyed by the OS
        "bit_source": "seeded generator (tests only)" if release.seeded else BIT_SOURCE,
        "calibration": {
            "epsilon": float(cal.epsilon),
            "neighbours": cal.neighbours,
            "rho": release.rho,  # the calibration's, as a JSON number
            "influence": int(cal.influence),
            "grid_exponent": int(cal.grid_exponent),
            "units": int(cal.units),
        },
        "coefficient_variance": float(release.coefficient_variance),
        # Weighted marginals answer some boxes with a bias: their worst case is then none (null).
        "paper_bound": finite_or_none(bound),
        "exact_worst_case_variance": finite_or_none(release.worst_case_variance),
        "shape": list(release.noisy.shape),
        "schema": None if schema is None else schema_to_json(schema),
        "seeded": bool(release.seeded),
        "seed": seed,
        "domain_from_data": [] if schema is None else list(schema.domain_from_data),
        "post_processing": post_processing(release),
        "extra": dict(metadata or {}),
    }


def post_processing(release: Release) -> dict[str, Any]:
    """What was done to the mechanism's output (only public information was used)."""
    if release.total_shift is None:
        return {"public_total": False, "total_shift": None}
    return {
        "public_total": True,
        "total_shift": float(release.total_shift),
        "description": "every cell was shifted by total_shift so that the total equals the number of rows, "
                       "which replace-one-tuple neighbours make public; the raw release is noisy - total_shift",
    }


#: Where :func:`~privelet_gui.io.releases.load_release` says what a reader must know about a file it loads (its signature,
#: flags that disagree): a function of the message.
ReleaseWarning = Callable[[str], None]


def release_warning(message: str) -> None:
    """The default :data:`ReleaseWarning`: a Python warning (:class:`UnverifiedReleaseWarning`)."""
    warnings.warn(UnverifiedReleaseWarning(message), stacklevel=3)


def release_from_metadata(meta: Mapping[str, Any], noisy: Any, p: Path, warn: ReleaseWarning) -> Release:
    """The release that ``meta`` describes (checked as :func:`~privelet_gui.io.releases.load_release` checks it),
    holding ``noisy`` (an array, or a lazily read one: anything with ``shape`` and
    indexing); errors name the file ``p``, and ``warn`` hears what a reader must know."""
    return release_holding(release_fields(meta, p, warn), noisy, p)


def release_holding(fields: dict[str, Any], noisy: Any, p: Path) -> Release:
    shape = tuple(noisy.shape)
    if shape != fields["shape"]:
        raise invalid_release(p, f"the matrix has shape {shape}, the metadata says {fields['shape']}")
    return Release(noisy=noisy, **{key: value for key, value in fields.items() if key != "shape"})


def invalid_release(p: Path, what: str) -> ReleaseFileError:
    """The error for a release file or folder ``p`` whose metadata or matrix are not a valid release."""
    return ReleaseFileError(
        f"{p}: not a valid release: {what}; the file was damaged or edited, make it again with 'privelet release'"
    )


def _number(meta: Mapping[str, Any], key: str, p: Path, *, positive: bool = True) -> float:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid_release(p, f'"{key}" must be a number, got {shown(value)}')
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or (number <= 0 if positive else number < 0):
        raise invalid_release(p, f'"{key}" must be a {"positive" if positive else "non-negative"} finite number, '
                          f"got {shown(value)}")
    return number


def _integer(meta: Mapping[str, Any], key: str, p: Path, lo: int, hi: int) -> int:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise invalid_release(p, f'"{key}" must be an integer from {lo} to {hi}, got {shown(value)}')
    return value


def finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _marginals_list(meta: Mapping[str, Any], p: Path) -> tuple[tuple[tuple[str, ...], int], ...]:
    value = meta.get("marginals")
    if not isinstance(value, list) or not all(
        isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)
        and all(isinstance(name, str) for name in entry[0])
        and isinstance(entry[1], int) and not isinstance(entry[1], bool) for entry in value
    ):
        raise invalid_release(p, f'"marginals" must be a list of [attribute names, integer weight], got {shown(value)}')
    return tuple((tuple(names), weight) for names, weight in value)


def _text_list(meta: Mapping[str, Any], key: str, p: Path) -> tuple[str, ...]:
    value = meta.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_release(p, f'"{key}" must be a list of attribute names, got {shown(value)}')
    return tuple(value)


def release_fields(meta: Mapping[str, Any], p: Path, warn: ReleaseWarning) -> dict[str, Any]:
    """The fields of a :class:`Release` from checked metadata (and ``shape``: the matrix's).

    Refused: an unknown mechanism, neighbour relation or sampler; epsilon, rho, scale and
    the calibration's fields that are not finite numbers of the right kind; a calibration
    whose epsilon, neighbours or rho differ from the release's, or whose noise is smaller
    than the mechanism needs; S_A, rho or the mechanism inconsistent with the schema; a shape
    that is not a list of positive integers or differs from the schema's. Read as seeded
    (and said to ``warn``): a release whose seeded flag and bit source disagree (:func:`_seeded`).
    """
    mechanism = meta.get("mechanism")
    if mechanism not in (*MECHANISMS, STRATEGIES, MARGINALS):
        raise invalid_release(p, f'"mechanism" must be one of {", ".join((*MECHANISMS, STRATEGIES, MARGINALS))}, '
                                 f"got {shown(mechanism)}")
    neighbours = meta.get("neighbours")
    if neighbours not in NEIGHBOURS:
        raise invalid_release(p, f'"neighbours" must be one of {", ".join(NEIGHBOURS)}, got {shown(neighbours)}')
    sampler = meta.get("sampler")
    if sampler not in READABLE_SAMPLERS:
        raise invalid_release(p, f'"sampler" must be one of {", ".join(READABLE_SAMPLERS)}, got {shown(sampler)}')
    epsilon = _number(meta, "epsilon", p)
    rho = _number(meta, "rho", p)
    scale = _number(meta, "scale", p)
    sa = _text_list(meta, "sa", p)
    strategies = _text_list(meta, "strategies", p) if "strategies" in meta else ()
    marginals = _marginals_list(meta, p) if "marginals" in meta else ()
    for key in ("seeded",):
        if not isinstance(meta.get(key), bool):
            raise invalid_release(p, f'"{key}" must be true or false, got {shown(meta.get(key))}')
    seed = meta.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0 or not meta["seeded"]):
        raise invalid_release(p, f'"seed" must be empty, or for a seeded release a non-negative integer, got {shown(seed)}')
    for key in ("coefficient_variance", "paper_bound", "exact_worst_case_variance", "nominal_scale"):
        if key in meta and not (key in ("paper_bound", "exact_worst_case_variance") and meta[key] is None):
            _number(meta, key, p, positive=False)
    shape_value = meta.get("shape")
    if not (isinstance(shape_value, list) and shape_value and all(
        isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape_value
    )):
        raise invalid_release(p, f'"shape" must be a list of positive integers, got {shown(shape_value)}')
    shape = tuple(shape_value)
    cal = meta.get("calibration")
    if not isinstance(cal, Mapping):
        raise invalid_release(p, f'"calibration" must be an object, got {shown(cal)}')
    if _number(cal, "epsilon", p) != epsilon:
        raise invalid_release(p, f"the calibration's epsilon {cal['epsilon']!r} differs from the release's {epsilon!r}")
    if cal.get("neighbours") != neighbours:
        raise invalid_release(p, f"the calibration's neighbours {shown(cal.get('neighbours'))} differ from the release's")
    if _number(cal, "rho", p) != rho:
        raise invalid_release(p, f"the calibration's rho {cal['rho']!r} differs from the release's {rho!r}")
    calibration = NoiseCalibration(
        epsilon=epsilon,
        neighbours=neighbours,
        rho=cal["rho"],
        influence=_integer(cal, "influence", p, 1, 1 << 62),
        grid_exponent=_integer(cal, "grid_exponent", p, -1074, 1023),
        units=_integer(cal, "units", p, 1, 1 << 62),
    )
    if calibration.excess < 0:
        raise invalid_release(p, "the calibration's noise is smaller than the sensitivity needs (units x grid < s x rho)")
    if not math.isclose(calibration.scale, scale, rel_tol=1e-9):
        raise invalid_release(p, f'"scale" {scale!r} differs from its calibration\'s {calibration.scale!r}')
    schema = _release_schema(meta.get("schema"), shape, p)
    if schema is None and mechanism != "basic":
        raise invalid_release(p, f"a {mechanism_name(mechanism)} release needs its schema, and the file holds none")
    try:
        # The spec checks S_A against the schema (a release without one is Basic over plain axes).
        spec = ReleaseSpec(schema if schema is not None else axes_schema(shape), epsilon, mechanism,
                           () if mechanism in (STRATEGIES, MARGINALS) else sa, neighbours, strategies=strategies,
                           marginals=marginals)
    except PriveletError as exc:
        raise invalid_release(p, str(exc)) from None
    if spec.label != mechanism or spec.effective_sa != sa or (mechanism != STRATEGIES and spec.sa != sa):
        raise invalid_release(p, f"S_A {{{', '.join(sa)}}} does not fit the mechanism {mechanism_name(mechanism)}")
    if spec.rho != rho:
        raise invalid_release(p, f"rho is {rho!r}, but this schema and S_A give {spec.rho}")
    return {
        "epsilon": epsilon,
        "sa": sa,
        "strategies": strategies,
        "marginals": spec.marginals,
        "rho": cal["rho"],
        "scale": scale,
        "mechanism": mechanism,
        "neighbours": neighbours,
        "calibration": calibration,
        "schema": schema,
        "seeded": _seeded(meta, p, warn),
        "sampler": sampler,
        "total_shift": _total_shift(meta, p),
        "shape": shape,
    }


def _seeded(meta: Mapping[str, Any], p: Path, warn: ReleaseWarning) -> bool:
    """Whether to read the release as seeded: when its ``seeded`` flag says so, and also when
    its ``bit_source`` names anything but the OS-keyed generator of unseeded releases.

    Two flags that disagree mean an edited or damaged file. It is read as seeded, not
    refused: a seeded file read as private would be exported without its mark (its noise can
    be removed by anyone who has the seed), while a private file read as seeded only needs
    ``--allow-seeded`` (in the app, a confirmation) and is marked; and the file stays readable.
    """
    flag, source = meta["seeded"], meta.get("bit_source")
    if source is None:  # files written before bit_source was recorded
        return bool(flag)
    if not isinstance(source, str):
        raise invalid_release(p, f'"bit_source" must be text, got {shown(source)}')
    if flag != (source != BIT_SOURCE):
        warn(
            f"{p}: its seeded flag ({str(flag).lower()}) and its bit source ({shown(source)}) disagree, so the file was "
            "edited or damaged. It is read as a SEEDED TEST RELEASE (not private): exporting it needs --allow-seeded "
            "(in the app, a confirmation) and the export is marked as seeded. Do not publish it."
        )
    return bool(flag) or source != BIT_SOURCE


def _release_schema(obj: object, shape: tuple[int, ...], p: Path) -> Schema | None:
    if obj is None:
        return None
    try:
        schema = schema_from_json(obj, source=f"{p} (schema)")
    except PriveletError as exc:
        raise ReleaseFileError(str(exc)) from None
    if schema.shape != shape:
        raise invalid_release(p, f'"shape" is {list(shape)}, but the schema needs {list(schema.shape)}')
    return schema


def _total_shift(meta: Mapping[str, Any], p: Path) -> float | None:
    """The recorded shift to the public total (files written before it existed have none)."""
    post = meta.get("post_processing")
    if post is None:
        return None
    if not isinstance(post, Mapping):
        raise invalid_release(p, f'"post_processing" must be an object, got {shown(post)}')
    shift = post.get("total_shift")
    if shift is None:
        return None
    if isinstance(shift, bool) or not isinstance(shift, (int, float)) or not is_finite_number(shift):
        raise invalid_release(p, f'"post_processing.total_shift" must be a finite number, got {shown(shift)}')
    if meta.get("neighbours") != "replace":
        raise invalid_release(p, "it records a shift to the public total under add/remove neighbours, where the total is not public")
    return float(shift)
