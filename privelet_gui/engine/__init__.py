"""The Privelet engine: frequency matrices, per-axis strategies, the noise, bounds and queries.

numpy with compiled loops (numba), pandas at the edges; it never imports Qt. Its parts, by
folder: ``model`` (attributes, schemas, hierarchies), ``strategies`` (how each axis is measured:
identity, Haar, the nominal wavelet, trees with least squares), ``kernels`` (the compiled loops), ``noise`` (the grid, the
samplers, the random bits), ``queries`` and ``bounds`` (box queries, the paper's bounds and exact variances),
``accuracy`` (workloads, exact errors, the strategy search, the advisor), and ``pipeline`` and
``spec`` (a release). Everything public is re-exported here:

>>> import numpy as np
>>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema, privelet_plus
>>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 99),
...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
>>> release = privelet_plus(np.zeros(schema.shape), schema, epsilon=1.0, sa=["sex"])
>>> release.noisy.shape
(100, 2)
"""

from .accuracy.advisor import Advice, AttributeMultiplier, Suggestion, advise
from .accuracy.evaluation import (
    ErrorPreview,
    EvaluationRow,
    QuintileRow,
    coverage_groups,
    coverage_levels,
    coverage_summary,
    evaluate,
    expected_by_coverage,
    expected_errors,
    marginal,
    measure_release,
    quintile_summary,
)
from .accuracy.sa_choice import (
    EXHAUSTIVE_UP_TO,
    SA_RULE_ALIASES,
    SA_RULES,
    SaChoice,
    SaRule,
    best_sa,
    check_sa_rule,
    resolve_sa,
)
from .accuracy.strategy_search import StrategyChoice, axis_candidates, best_strategy
from .accuracy.workloads import (
    OBJECTIVES,
    AxisPredicates,
    ProductPart,
    Workload,
    expected_error,
    marginals,
    paper_workload,
    workload_variances,
)
from .bounds import (
    Z95,
    AttributeFactors,
    VarianceModel,
    epsilon_for_variance,
    margin95,
    paper_bound,
    paper_factors,
    query_variance,
    recommend_sa,
    variance_for_margin95,
    variance_model,
    worst_case_variance,
)
from .counting import CountReport, DroppedRowsWarning, FrequencyCounter, frequency_matrix
from .errors import Cancelled, DomainError, HierarchyError, InternalError, PriveletError, SchemaError
from .mechanisms import basic, prepare_kernels, privelet, privelet_plus
from .memory import available_memory, byte_size
from .model.hierarchy import Hierarchy, HierarchyNode, NodeInfo
from .model.schema import Attribute, NominalAttribute, NumericBins, OrdinalAttribute, Schema
from .noise.bits import BIT_SOURCE
from .noise.calibration import (
    ADD_REMOVE_MAX_ROWS,
    EPSILON_MAX,
    EPSILON_MIN,
    NEIGHBOUR_NAMES,
    NEIGHBOURS,
    SAMPLERS,
    Neighbours,
    NoiseCalibration,
    Sampler,
    calibrate,
    check_epsilon,
)
from .pipeline import BigBlock, ReleasePipeline, Scratch, Sizing, thread_count, usable_cores
from .progress import Progress
from .queries import (
    PrefixSums,
    QueryBatch,
    RangeQuery,
    random_workload,
    relative_error,
    sanity_bound,
    square_error,
)
from .spec import (
    MARGINALS,
    MECHANISM_NAMES,
    MECHANISMS,
    READABLE_SAMPLERS,
    SAMPLER,
    STRATEGIES,
    Mechanism,
    Release,
    ReleaseSpec,
    mechanism_name,
)
from .strategies.base import AxisStrategy
from .strategies.haar import HaarTransform
from .strategies.identity import IdentityTransform
from .strategies.nominal import NominalTransform
from .strategies.plan import AXIS_STRATEGY_FORMS, StrategyPlan, axis_strategy, paper_strategy, short_strategy_name
from .strategies.stacked import StackedIdentity
from .strategies.tree import TreeStrategy

__all__ = [
    "ADD_REMOVE_MAX_ROWS",
    "AXIS_STRATEGY_FORMS",
    "BIT_SOURCE",
    "EPSILON_MAX",
    "EPSILON_MIN",
    "EXHAUSTIVE_UP_TO",
    "MARGINALS",
    "MECHANISMS",
    "MECHANISM_NAMES",
    "NEIGHBOURS",
    "NEIGHBOUR_NAMES",
    "OBJECTIVES",
    "READABLE_SAMPLERS",
    "SAMPLER",
    "SAMPLERS",
    "SA_RULES",
    "SA_RULE_ALIASES",
    "STRATEGIES",
    "Z95",
    "Advice",
    "Attribute",
    "AttributeFactors",
    "AttributeMultiplier",
    "AxisPredicates",
    "AxisStrategy",
    "BigBlock",
    "Cancelled",
    "CountReport",
    "DomainError",
    "DroppedRowsWarning",
    "ErrorPreview",
    "EvaluationRow",
    "FrequencyCounter",
    "HaarTransform",
    "Hierarchy",
    "HierarchyError",
    "HierarchyNode",
    "IdentityTransform",
    "InternalError",
    "Mechanism",
    "Neighbours",
    "NodeInfo",
    "NoiseCalibration",
    "NominalAttribute",
    "NominalTransform",
    "NumericBins",
    "OrdinalAttribute",
    "PrefixSums",
    "PriveletError",
    "ProductPart",
    "Progress",
    "QueryBatch",
    "QuintileRow",
    "RangeQuery",
    "Release",
    "ReleasePipeline",
    "ReleaseSpec",
    "SaChoice",
    "SaRule",
    "Sampler",
    "Schema",
    "SchemaError",
    "Scratch",
    "Sizing",
    "StackedIdentity",
    "StrategyChoice",
    "StrategyPlan",
    "Suggestion",
    "TreeStrategy",
    "VarianceModel",
    "Workload",
    "advise",
    "available_memory",
    "axis_candidates",
    "axis_strategy",
    "basic",
    "best_sa",
    "best_strategy",
    "byte_size",
    "calibrate",
    "check_epsilon",
    "check_sa_rule",
    "coverage_groups",
    "coverage_levels",
    "coverage_summary",
    "epsilon_for_variance",
    "evaluate",
    "expected_by_coverage",
    "expected_error",
    "expected_errors",
    "frequency_matrix",
    "margin95",
    "marginal",
    "marginals",
    "measure_release",
    "mechanism_name",
    "paper_bound",
    "paper_factors",
    "paper_strategy",
    "paper_workload",
    "prepare_kernels",
    "privelet",
    "privelet_plus",
    "query_variance",
    "quintile_summary",
    "random_workload",
    "recommend_sa",
    "relative_error",
    "resolve_sa",
    "sanity_bound",
    "short_strategy_name",
    "square_error",
    "thread_count",
    "usable_cores",
    "variance_for_margin95",
    "variance_model",
    "workload_variances",
    "worst_case_variance",
]
