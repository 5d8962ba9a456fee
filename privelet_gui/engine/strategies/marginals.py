"""Measuring weighted marginals and reconstructing M by least squares (docs/math.md, "Marginals").

A :class:`MarginalsStrategy` measures, for each subset S of the axes it holds, the marginal of M
onto S (the counts summed over the other axes) times an integer weight w_S, and answers with the
least-squares matrix ``x^ = (A'A)^+ A'y`` (A the stack of the weighted marginal operators). It is
not a Kronecker product of axis strategies, so it has its own release path (:meth:`release`);
the noise is the pipeline's: every weighted marginal cell is an integer numerator (denominator
1), rounded to the grid and given discrete Laplace noise by
:class:`~privelet_gui.engine.noise.samplers.NoiseSampler`.

``A'A`` is diagonal in the basis that splits each axis into its mean and its contrasts: for each
subset T of the axes the component "contrasts along T, means elsewhere" has the eigenvalue
``lambda_T = sum_{S >= T} w_S^2 prod_{i not in S} n_i``. So the reconstruction and every box query's
exact variance need arrays of marginal size only, never the matrix A.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..errors import PriveletError, SchemaError
from ..noise.bits import BlockCipher
from ..noise.calibration import NoiseCalibration, Sampler
from ..noise.samplers import NoiseSampler

__all__ = ["MarginalsStrategy", "box_components"]


def _axes_of(mask: int, dimensions: int) -> tuple[int, ...]:
    return tuple(axis for axis in range(dimensions) if mask >> axis & 1)


def _mask_of(axes: Sequence[int]) -> int:
    return sum(1 << axis for axis in axes)


def box_components(lo: np.ndarray, hi: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per box query and axis, the squared lengths of its indicator's mean and contrast parts.

    A 0/1 indicator q of k values on an axis of n splits into its projection on the constant
    vectors, of squared length ``k^2 / n``, and the rest (the contrasts), ``k - k^2 / n``.

    Parameters
    ----------
    lo, hi : numpy.ndarray
        Integer arrays ``(queries, d)``: inclusive first and last index per axis.
    shape : tuple of int
        M's shape.

    Returns
    -------
    tuple of numpy.ndarray
        ``(mean, contrast)``, float64 ``(queries, d)`` each.
    """
    sizes = np.asarray(shape, dtype=np.float64)
    cells = (np.asarray(hi, dtype=np.int64) - np.asarray(lo, dtype=np.int64) + 1).astype(np.float64)
    mean = cells**2 / sizes
    # An axis's whole domain has no contrast part: exactly 0, not a rounding residue.
    contrast = np.where(cells == sizes, 0.0, cells - mean)
    return mean, contrast


@dataclass(frozen=True)
class MarginalsStrategy:
    """Weighted marginals of M, reconstructed by least squares (see the module docstring).

    Attributes
    ----------
    shape : tuple of int
        M's shape.
    subsets : tuple of tuple of int
        The measured marginals: each a sorted tuple of axes (``()`` is the total), all distinct.
    weights : tuple of int
        A positive integer weight per subset: the weighted marginal is ``w_S`` times the marginal.

    Raises
    ------
    SchemaError
        An axis outside the shape, a repeated axis or subset, no subset, or a weight that is not a
        positive integer.
    """

    shape: tuple[int, ...]
    subsets: tuple[tuple[int, ...], ...]
    weights: tuple[int, ...]

    def __post_init__(self) -> None:
        d = len(self.shape)
        subsets = tuple(tuple(sorted(int(a) for a in s)) for s in self.subsets)
        if not subsets or len(subsets) != len(self.weights):
            raise SchemaError(f"a marginals strategy needs one weight per subset and at least one subset, got "
                              f"{len(subsets)} subsets and {len(self.weights)} weights")
        for subset in subsets:
            if len(set(subset)) != len(subset) or any(not 0 <= a < d for a in subset):
                raise SchemaError(f"a marginal's axes are distinct axes of 0..{d - 1}, got {subset}")
        if len(set(subsets)) != len(subsets):
            raise SchemaError(f"a marginal is measured once, got {subsets}")
        if any(isinstance(w, bool) or int(w) != w or w < 1 for w in self.weights):
            raise SchemaError(f"marginal weights are positive integers, got {self.weights}")
        object.__setattr__(self, "subsets", subsets)
        object.__setattr__(self, "weights", tuple(int(w) for w in self.weights))
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))

    # -- what the noise calibration needs (docs/math.md, "Strategies" and "The grid") -------------
    @property
    def rho(self) -> Fraction:
        """The sensitivity: a row adds 1 to one cell of each marginal, ``sum_S w_S`` in all."""
        return Fraction(sum(self.weights))

    @property
    def influence(self) -> int:
        """K: a row changes one cell of each marginal."""
        return len(self.subsets)

    @property
    def growth(self) -> int:
        """The largest weight: a weighted marginal cell is at most this times n."""
        return max(self.weights)

    @property
    def n_measurements(self) -> int:
        return sum(math.prod(self.shape[a] for a in s) for s in self.subsets)

    # -- the eigenvalues of A'A -----------------------------------------------------------------
    @cached_property
    def _masks(self) -> np.ndarray:
        return np.array([_mask_of(s) for s in self.subsets], dtype=np.int64)

    @cached_property
    def eigenvalues(self) -> dict[int, float]:
        """``lambda_T`` for every T (a bit mask of axes) below a measured subset; every other T's is 0.

        ``lambda_T = sum_{S >= T} w_S^2 prod_{i not in S} n_i`` (docs/math.md, "Marginals")."""
        d = len(self.shape)
        covered: set[int] = set()
        for mask in self._masks.tolist():
            sub = mask
            while True:  # every submask of the subset, itself and 0 included
                covered.add(sub)
                if sub == 0:
                    break
                sub = (sub - 1) & mask
        out = {}
        for t in sorted(covered):
            out[t] = float(sum(w * w * math.prod(self.shape[i] for i in range(d) if not mask >> i & 1)
                               for mask, w in zip(self._masks.tolist(), self.weights) if mask & t == t))
        return out

    # -- measuring ------------------------------------------------------------------------------
    def numerators(self, counts: np.ndarray) -> np.ndarray:
        """The weighted marginals of integer ``counts``: ``w_S`` times each marginal, flattened in C
        order and concatenated in subset order (int64; their denominators are all 1).

        Parameters
        ----------
        counts : numpy.ndarray
            int64, shape :attr:`shape`.

        Returns
        -------
        numpy.ndarray
            int64, ``(n_measurements,)``.
        """
        d = len(self.shape)
        parts = [w * counts.sum(axis=tuple(i for i in range(d) if i not in s), dtype=np.int64).reshape(-1)
                 for s, w in zip(self.subsets, self.weights)]
        return np.concatenate(parts).astype(np.int64, copy=False)

    def split(self, measurements: np.ndarray) -> list[np.ndarray]:
        """The flat measurement vector cut back into one array per subset (shape: S's axes)."""
        out, start = [], 0
        for s in self.subsets:
            marginal_shape = tuple(self.shape[a] for a in s)
            size = math.prod(marginal_shape)
            out.append(measurements[start:start + size].reshape(marginal_shape))
            start += size
        return out

    # -- least squares ------------------------------------------------------------------------------
    def reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        """The least-squares matrix ``(A'A)^+ A'y`` of noisy weighted marginals ``y`` (as
        :meth:`numerators` lays them out), computed per eigen-component (docs/math.md, "Marginals").

        Parameters
        ----------
        measurements : numpy.ndarray
            float64, ``(n_measurements,)``.

        Returns
        -------
        numpy.ndarray
            float64, shape :attr:`shape`.
        """
        d = len(self.shape)
        marginals = self.split(np.asarray(measurements, dtype=np.float64))
        masks = self._masks.tolist()
        # Each component lives on its axes T only; it is added to the array of the first measured
        # subset holding T, and each subset's array is broadcast into M once.
        hosts = [np.zeros(m.shape) for m in marginals]
        for t, eigenvalue in self.eigenvalues.items():
            if eigenvalue == 0.0:
                continue
            t_axes = _axes_of(t, d)
            component = np.zeros(tuple(self.shape[a] for a in t_axes))
            for marginal, mask, subset, w in zip(marginals, masks, self.subsets, self.weights):
                if mask & t == t:
                    # The mean over S's axes outside T: the projection on their constant vectors.
                    drop = tuple(k for k, a in enumerate(subset) if not t >> a & 1)
                    component += w * (marginal.mean(axis=drop) if drop else marginal)
            for k in range(len(t_axes)):  # the contrasts along each axis of T
                component -= component.mean(axis=k, keepdims=True)
            host = next(j for j, mask in enumerate(masks) if mask & t == t)
            hosts[host] += component.reshape(tuple(self.shape[a] if t >> a & 1 else 1 for a in self.subsets[host])) \
                / eigenvalue
        out = np.zeros(self.shape)
        for gathered, subset in zip(hosts, self.subsets):
            out += gathered.reshape(tuple(self.shape[a] if a in subset else 1 for a in range(d)))
        return out

    # -- exact variances, per unit of noise variance on a weighted measurement --------------------
    def component_variances(self, mean: np.ndarray, contrast: np.ndarray, *, public_total: bool = False) -> np.ndarray:
        """``q' (A'A)^+ q`` from per-axis mean and contrast parts (:func:`box_components`; or their
        averages over a product of predicates, whose variance is then the average's).

        A row with a contrast part on axes that no measured subset holds has a component the
        strategy does not measure: its least-squares answer is biased by a data-dependent amount,
        and its figure is ``inf``. ``public_total``: the release shifted to the public total, whose
        mean component (T empty) is exact.

        Parameters
        ----------
        mean, contrast : numpy.ndarray
            float64 ``(rows, d)``.
        public_total : bool, default False, keyword-only
            See above.

        Returns
        -------
        numpy.ndarray
            float64 ``(rows,)``.
        """
        d = len(self.shape)
        out = np.zeros(len(mean))
        for t, eigenvalue in self.eigenvalues.items():
            if (t == 0 and public_total) or eigenvalue == 0.0:
                continue
            inside = np.array([bool(t >> a & 1) for a in range(d)])
            out += np.where(inside, contrast, mean).prod(axis=1) / eigenvalue
        support = ((contrast > 0) * (1 << np.arange(d))).sum(axis=1)
        return np.where(self.estimable_supports(support), out, np.inf)

    def estimable_supports(self, support: np.ndarray) -> np.ndarray:
        """Whether each support (a bit mask of axes) lies in a measured subset (and has
        ``lambda > 0`` on every part below it)."""
        support = np.asarray(support, dtype=np.int64)
        return np.any((support[:, None] & ~self._masks[None, :]) == 0, axis=1)

    def query_variances(self, lo: np.ndarray, hi: np.ndarray, *, public_total: bool = False) -> np.ndarray:
        """``q' (A'A)^+ q`` of box queries (``inf`` where the strategy answers with a bias).

        Parameters
        ----------
        lo, hi : numpy.ndarray
            Integer arrays ``(queries, d)``: inclusive first and last index per axis.
        public_total : bool, default False, keyword-only
            On the release shifted to the public total.

        Returns
        -------
        numpy.ndarray
            float64 ``(queries,)``, per unit of noise variance on a weighted measurement.
        """
        return self.component_variances(*box_components(lo, hi, self.shape), public_total=public_total)

    def worst_box_variance(self) -> float:
        """The largest ``q' (A'A)^+ q`` over every box of M (``inf`` when some box has a part no
        measured subset holds). A box's figure depends on its length along each axis only: the
        figures of every combination of lengths are summed component by component, one length
        along the first axis at a time (arrays of M's size over the first axis's).

        Returns
        -------
        float
            Per unit of noise variance on a weighted measurement.
        """
        d = len(self.shape)
        varying = _mask_of([a for a in range(d) if self.shape[a] > 1])
        if not self.estimable_supports(np.array([varying]))[0]:
            return math.inf
        lengths = [np.arange(1, n + 1, dtype=np.float64) for n in self.shape]
        means = [k**2 / n for k, n in zip(lengths, self.shape)]
        contrasts = [np.where(k == n, 0.0, k - m) for k, n, m in zip(lengths, self.shape, means)]
        rest = self.shape[1:]
        worst = 0.0
        for first in range(self.shape[0]):
            figures = np.zeros(rest)
            for t, eigenvalue in self.eigenvalues.items():
                if eigenvalue == 0.0:
                    continue
                term = np.full((1,) * (d - 1), (contrasts[0] if t & 1 else means[0])[first] / eigenvalue)
                for a in range(1, d):
                    factor = contrasts[a] if t >> a & 1 else means[a]
                    term = term * factor.reshape(tuple(-1 if b == a else 1 for b in range(1, d)))
                figures += term
            worst = max(worst, float(figures.max()))
        return worst

    # -- the release ------------------------------------------------------------------------------
    def release(self, counts: np.ndarray, calibration: NoiseCalibration, sampler: Sampler, key: bytes) -> np.ndarray:
        """The least-squares matrix of the noisy weighted marginals of ``counts`` (before any shift
        to the public total): each measurement is rounded to ``calibration``'s grid and given its
        discrete Laplace noise, drawn from the stream of its position in :meth:`numerators`' order.

        Parameters
        ----------
        counts : numpy.ndarray
            int64 counts, shape :attr:`shape`.
        calibration : NoiseCalibration
            Made with this strategy's :attr:`rho`, :attr:`influence` and :attr:`growth`.
        sampler : {"exact", "standard"}
            The noise sampler.
        key : bytes
            The release's key.

        Returns
        -------
        numpy.ndarray
            float64, shape :attr:`shape`.

        Raises
        ------
        PriveletError
            ``calibration`` was made for another sensitivity.
        """
        if calibration.rho != self.rho or calibration.influence != self.influence:
            raise PriveletError("the noise calibration was made for another strategy")
        numerators = self.numerators(np.asarray(counts, dtype=np.int64))
        noisy = np.empty(len(numerators))
        ones = np.ones(len(numerators), dtype=np.int64)
        NoiseSampler(sampler, calibration).add(
            numerators, noisy, len(numerators), np.ones(1, dtype=np.int64), ones,
            np.zeros(1, dtype=np.uint64), np.arange(len(numerators), dtype=np.uint64), BlockCipher(key))
        return self.reconstruct(noisy)
