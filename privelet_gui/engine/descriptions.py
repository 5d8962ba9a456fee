"""What a release's choices mean, in plain words: one mapping per kind of choice.

The release report (:mod:`privelet_gui.io.report`) says what a mechanism does, how each axis is
measured, what the neighbouring notion protects and how the noise is drawn from these tables
and nowhere else. A new mechanism or axis strategy adds its entry here; one without an entry is
still described (by its name), so a report never fails for want of words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .noise.bits import BIT_SOURCE
from .strategies.plan import short_strategy_name

if TYPE_CHECKING:
    from .model.schema import Schema
    from .spec import ReleaseSpec

__all__ = [
    "AXIS_STRATEGY_DESCRIPTIONS",
    "BIT_SOURCE_DESCRIPTIONS",
    "MECHANISM_DESCRIPTIONS",
    "NEIGHBOUR_MEANINGS",
    "SAMPLER_DESCRIPTIONS",
    "describe_axis_strategy",
    "describe_marginals",
    "describe_measurements",
    "describe_mechanism",
    "describe_strategies",
]

#: Each mechanism (a release's ``mechanism`` label): what it does and when it is the right one.
MECHANISM_DESCRIPTIONS: dict[str, str] = {
    "basic": (
        "Basic adds independent Laplace noise to every cell of the frequency matrix. Each cell is as "
        "accurate as it can be, but a query that sums many cells sums the noise of each of them, so "
        "the error grows with the number of cells a query covers."
    ),
    "privelet": (
        "Privelet (Xiao, Wang and Gehrke) transforms the frequency matrix with wavelets along every "
        "attribute (the Haar wavelet for ordered attributes, the nominal wavelet over the hierarchy "
        "for unordered ones), adds Laplace noise to the weighted wavelet coefficients and transforms "
        "back. A range query then depends on a few noisy coefficients only, so its error grows with "
        "the logarithm of the domains rather than with the cells it covers."
    ),
    "privelet+": (
        "Privelet+ applies Privelet's wavelets to some attributes and leaves the others (the set "
        "S_A) untransformed, as Basic does. Small domains are cheaper untransformed: the paper's "
        "rule puts an attribute in S_A when its size is at most P(A)^2 H(A)."
    ),
    "strategies": (
        "Each attribute is measured by the strategy that suits the queries expected of it: counted value "
        "by value, transformed by the paper's wavelet, or counted at every level of a hierarchy of groups "
        "of its values (runs of neighbouring values for an ordered attribute, the attribute's own "
        "hierarchy for an unordered one). Laplace noise is added to every measurement, and the noisy "
        "levels are made consistent by least squares, which gives each query the smallest variance "
        "these measurements allow (Hay et al. 2010; Qardaji, Yang and Li 2013)."
    ),
    "marginals": (
        "Weighted marginals: the counts of chosen combinations of attributes (the marginals the expected "
        "queries ask for, and some below them), each with a weight, get Laplace noise, and the frequency "
        "matrix is rebuilt from them by least squares (McKenna et al. 2018). A query on a combination the "
        "marginals hold gets the smallest variance they allow; one on a combination they do not hold is "
        "answered from an even spread and carries a bias that depends on the data."
    ),
}

#: Each axis strategy (the ``kind`` of :class:`~privelet_gui.engine.strategies.base.AxisStrategy`):
#: how one attribute's axis is measured.
AXIS_STRATEGY_DESCRIPTIONS: dict[str, str] = {
    "identity": "each value counted on its own (untransformed, in S_A)",
    "haar": "Haar wavelet over the ordered values",
    "nominal": "nominal wavelet over the attribute's hierarchy",
    "tree": "counts at every level of a hierarchy of groups of its values, made consistent by least squares",
    "stacked": "each value counted, plus a few weighted sums of values learned for the expected queries, "
               "made consistent by least squares",
}

#: What each neighbouring notion makes the guarantee protect, for people.
NEIGHBOUR_MEANINGS: dict[str, str] = {
    "replace": (
        "Two tables are neighbours when they differ in one record replaced by another (the paper's "
        "notion). The guarantee hides the values of any one person's record; the number of records "
        "is treated as public, so the release may be shifted to sum to it."
    ),
    "add-remove": (
        "Two tables are neighbours when one has one record more than the other. The guarantee hides "
        "whether any one person is in the table at all, and the number of records stays private: it "
        "is published nowhere, not even as the total."
    ),
}

#: Each noise sampler, for people.
SAMPLER_DESCRIPTIONS: dict[str, str] = {
    "exact": (
        "exact: discrete Laplace noise on a fine grid drawn with integer arithmetic only, so that "
        "floating-point rounding cannot weaken the guarantee"
    ),
    "standard": (
        "standard: discrete Laplace noise drawn by floating-point inversion (the same law as the "
        "exact sampler up to rounding of about 1e-16)"
    ),
    "discrete-laplace/geometric-difference": "standard (as named by older release files)",
}

#: Each source of random bits a release file may name, for people.
BIT_SOURCE_DESCRIPTIONS: dict[str, str] = {
    BIT_SOURCE: (
        "AES-128 in counter mode, keyed from the operating system's secure random source; the key "
        "is never stored"
    ),
    "seeded generator (tests only)": (
        "a generator seeded by the caller: anyone who knows the seed can remove the noise"
    ),
}


def describe_mechanism(label: str) -> str:
    """What the mechanism ``label`` does (a generic sentence for one without an entry)."""
    return MECHANISM_DESCRIPTIONS.get(label, f"the mechanism {label!r}: noise added to the measurements its axis "
                                             "strategies take, then reconstructed")


def describe_axis_strategy(kind: str, name: str = "") -> str:
    """How an axis measured by the strategy ``kind`` (called ``name``: its branching and level
    weights) is measured; its name for one without an entry."""
    text = AXIS_STRATEGY_DESCRIPTIONS.get(kind, f"the {kind} strategy")
    if kind != "tree" or not name:
        return text
    base, _, weights = name.partition("/")
    shape = "the attribute's hierarchy" if base == "hierarchy" else f"groups of {base[5:]} at each level"
    levels = f", levels weighted {weights.replace(',', ', ')} from the top" if weights else ""
    return f"{text} ({shape}{levels})"


def describe_marginals(marginals: tuple[tuple[tuple[str, ...], int], ...]) -> str:
    """Weighted marginals (as :attr:`~privelet_gui.engine.ReleaseSpec.marginals`), in one line.

    >>> describe_marginals(((("age", "sex"), 3), ((), 1)))
    'weighted marginals age x sex (weight 3); the total (weight 1)'
    """
    return "weighted marginals " + "; ".join(f"{' x '.join(names) or 'the total'} (weight {weight})"
                                             for names, weight in marginals)


def describe_strategies(schema: Schema, strategies: tuple[str, ...]) -> str:
    """Each attribute of ``schema`` and its strategy's short name (``strategies``, one per
    attribute), in one line: ``age tree-16, sex identity``."""
    return ", ".join(f"{a.name} {short_strategy_name(name)}" for a, name in zip(schema, strategies, strict=True))


def describe_measurements(spec: ReleaseSpec) -> str:
    """What a release of ``spec`` measures, in one line: its weighted marginals and their
    weights, or each attribute and its strategy's short name.

    >>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, ReleaseSpec, Schema
    >>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 15),
    ...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    >>> describe_measurements(ReleaseSpec(schema, 1.0, sa=("sex",)))
    'age wavelet, sex identity'
    >>> describe_measurements(ReleaseSpec(schema, 1.0, "marginals", marginals=((("age", "sex"), 3), (("sex",), 1))))
    'weighted marginals age x sex (weight 3); sex (weight 1)'
    """
    if spec.label == "marginals":
        return describe_marginals(spec.marginals)
    return describe_strategies(spec.schema, spec.axis_strategies)
