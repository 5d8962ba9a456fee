"""The Privelet engine: frequency matrices, wavelet transforms, mechanisms, bounds, queries.

Pure numpy (pandas at the edges); it never imports Qt. Everything public is
re-exported here:

>>> import numpy as np
>>> from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema, privelet_plus
>>> schema = Schema([OrdinalAttribute.integer_range("age", 0, 99),
...                  NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
>>> release = privelet_plus(np.zeros(schema.shape), schema, epsilon=1.0, sa=["sex"])
>>> release.noisy.shape
(100, 2)
"""

from ._compiled import prepare_compiled
from .accuracy.advisor import EXHAUSTIVE_UP_TO, Advice, AttributeMultiplier, SaChoice, Suggestion, advise, best_sa
from .accuracy.bounds import (
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
from .accuracy.evaluation import (
    ErrorPreview,
    EvaluationRow,
    QuintileRow,
    coverage_groups,
    evaluate,
    expected_errors,
    marginal,
    measure_release,
    quintile_summary,
)
from .accuracy.queries import (
    PrefixSums,
    QueryBatch,
    RangeQuery,
    random_workload,
    relative_error,
    sanity_bound,
    square_error,
)
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
from .counting import CountReport, DroppedRowsWarning, FrequencyCounter, frequency_matrix
from .errors import Cancelled, DomainError, HierarchyError, PriveletError, SchemaError
from .haar import HaarTransform, haar_forward, haar_inverse, haar_weights
from .hn import TransformPlan, axis_transform, hn_forward, hn_inverse
from .mechanisms import basic, privelet, privelet_plus
from .model.hierarchy import Hierarchy, HierarchyNode, NodeInfo
from .model.schema import Attribute, NominalAttribute, NumericBins, OrdinalAttribute, Schema
from .noise import ADD_REMOVE_MAX_ROWS, NoiseCalibration, calibrate, discrete_laplace
from .nominal import NominalTransform, nominal_forward, nominal_inverse, nominal_weights
from .progress import Progress
from .release import SAMPLER, Release
from .spec import MECHANISM_NAMES, MECHANISMS, Mechanism, ReleaseSpec, mechanism_name
from .transform import AxisTransform, IdentityTransform

__all__ = [
    "ADD_REMOVE_MAX_ROWS",
    "EXHAUSTIVE_UP_TO",
    "MECHANISMS",
    "MECHANISM_NAMES",
    "OBJECTIVES",
    "SAMPLER",
    "Z95",
    "Advice",
    "Attribute",
    "AttributeFactors",
    "AttributeMultiplier",
    "AxisPredicates",
    "AxisTransform",
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
    "Mechanism",
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
    "ReleaseSpec",
    "SaChoice",
    "Schema",
    "SchemaError",
    "Suggestion",
    "TransformPlan",
    "VarianceModel",
    "Workload",
    "advise",
    "axis_transform",
    "basic",
    "best_sa",
    "calibrate",
    "coverage_groups",
    "discrete_laplace",
    "epsilon_for_variance",
    "evaluate",
    "expected_error",
    "expected_errors",
    "frequency_matrix",
    "haar_forward",
    "haar_inverse",
    "haar_weights",
    "hn_forward",
    "hn_inverse",
    "margin95",
    "marginal",
    "marginals",
    "measure_release",
    "mechanism_name",
    "nominal_forward",
    "nominal_inverse",
    "nominal_weights",
    "paper_bound",
    "paper_factors",
    "paper_workload",
    "prepare_compiled",
    "privelet",
    "privelet_plus",
    "query_variance",
    "quintile_summary",
    "random_workload",
    "recommend_sa",
    "relative_error",
    "sanity_bound",
    "square_error",
    "variance_for_margin95",
    "variance_model",
    "workload_variances",
    "worst_case_variance",
]
