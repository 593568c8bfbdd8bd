"""What statistical model an agent's ``model(df)`` fits, and on which columns, read statically (no execution).

Recognised APIs (qualified through the code's imports; BLADE's kernel names ``sm``, ``smf``, ``np``, ``pd`` and
``stats`` are assumed when not imported):

* statsmodels array API: ``sm.OLS/WLS/GLS/Logit/Probit/Poisson/NegativeBinomial/GLM/MixedLM/GEE/MNLogit/
  QuantReg/RLM/OrderedModel/PHReg`` (``endog``, ``exog``, ``family``, ``groups``) and their ``.from_formula``;
* statsmodels formula API: ``smf.ols/wls/gls/logit/probit/poisson/negativebinomial/glm/mixedlm/gee/...``;
  formulas are parsed with patsy (statsmodels' own formula parser), ``groups``/``re_formula`` add columns;
* GLM families: Binomial → logistic (probit link → probit), Poisson, NegativeBinomial, Gaussian (identity) → OLS,
  others → "Generalized linear model (other)";
* scikit-learn estimators (``LinearRegression``, ``LogisticRegression``, ``PoissonRegressor``, ...) through
  ``.fit(X, y)``;
* scipy.stats tests and correlations (``ttest_ind``, ``chi2_contingency``, ``pearsonr``, ``linregress``, ...);
* linearmodels (``PanelOLS``, ``RandomEffects``, ``IV2SLS``, ... and ``.from_formula``).

Columns are traced through assignments (``X = df[[...]]``, ``X = sm.add_constant(X)``, ``pd.get_dummies``,
``train_test_split``, tuple unpacking, ``df['new'] = ...`` inside the model function), so the DV and the
predictors are known separately. The result names the call and line it came from, so a match can say why.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from evaluation.specs import ModelFamily

__all__ = ["AgentModel", "ModelCall", "analyse_model_code", "formula_columns"]

F = ModelFamily

_DEFAULT_ALIASES = {"sm": "statsmodels.api", "smf": "statsmodels.formula.api", "np": "numpy", "pd": "pandas",
                    "stats": "scipy.stats"}

# statsmodels class / formula-function name (lower-cased) → family; GLM/GEE are refined by their ``family``
_STATSMODELS: dict[str, ModelFamily] = {
    "ols": F.OLS, "wls": F.OLS, "gls": F.OLS, "glsar": F.OLS, "quantreg": F.OTHER, "rlm": F.OTHER,
    "logit": F.LOGISTIC, "mnlogit": F.LOGISTIC, "probit": F.PROBIT, "poisson": F.POISSON,
    "negativebinomial": F.NEGATIVE_BINOMIAL, "negativebinomialp": F.NEGATIVE_BINOMIAL,
    "generalizedpoisson": F.POISSON, "zeroinflatedpoisson": F.POISSON,
    "zeroinflatednegativebinomialp": F.NEGATIVE_BINOMIAL, "glm": F.GLM, "gee": F.GLM, "ordinalgee": F.ORDINAL,
    "mixedlm": F.MIXED, "binomialbayesmixedglm": F.MIXED, "poissonbayesmixedglm": F.MIXED,
    "orderedmodel": F.ORDINAL, "phreg": F.SURVIVAL, "anova_lm": F.ANOVA, "anovarm": F.ANOVA,
    "pairwise_tukeyhsd": F.TEST, "ttest_ind": F.TEST, "ztest": F.TEST, "proportions_ztest": F.TEST,
}
_SKLEARN: dict[str, ModelFamily] = {
    "linearregression": F.OLS, "ridge": F.OLS, "lasso": F.OLS, "elasticnet": F.OLS, "ridgecv": F.OLS,
    "lassocv": F.OLS, "elasticnetcv": F.OLS, "sgdregressor": F.OLS, "huberregressor": F.OTHER,
    "logisticregression": F.LOGISTIC, "logisticregressioncv": F.LOGISTIC, "sgdclassifier": F.OTHER,
    "poissonregressor": F.POISSON, "gammaregressor": F.GLM, "tweedieregressor": F.GLM,
}
_SCIPY: dict[str, ModelFamily] = {
    "ttest_ind": F.TEST, "ttest_rel": F.TEST, "ttest_1samp": F.TEST, "mannwhitneyu": F.TEST, "wilcoxon": F.TEST,
    "chi2_contingency": F.TEST, "chisquare": F.TEST, "fisher_exact": F.TEST, "kruskal": F.TEST,
    "ks_2samp": F.TEST, "shapiro": F.TEST, "levene": F.TEST, "f_oneway": F.ANOVA, "pearsonr": F.CORRELATION,
    "spearmanr": F.CORRELATION, "kendalltau": F.CORRELATION, "pointbiserialr": F.CORRELATION,
    "linregress": F.OLS,
}
_LINEARMODELS: dict[str, ModelFamily] = {
    "panelols": F.OLS, "pooledols": F.OLS, "betweenols": F.OLS, "firstdifferenceols": F.OLS,
    "randomeffects": F.MIXED, "iv2sls": F.OLS, "ivliml": F.OLS, "ivgmm": F.OLS, "famamacbeth": F.OLS,
}
# helpers often called without a module prefix (BLADE's kernel and notebooks import them by name)
_BARE_STATSMODELS = {"anova_lm", "pairwise_tukeyhsd", "proportions_ztest", "orderedmodel"}
_AUXILIARY = {F.ANOVA, F.TEST, F.CORRELATION}  # chosen as the model only when nothing else is fitted

_FORMULA_WORDS = {"C", "Q", "I", "np", "log", "exp", "sqrt", "center", "standardize", "scale", "Treatment",
                  "Sum", "Poly", "Diff", "Helmert", "bs", "cr", "cc", "te", "abs", "EntityEffects", "TimeEffects",
                  "FixedEffects", "Intercept", "True", "False", "None", "math", "pow", "levels", "reference"}


class ModelCall(BaseModel):
    """One recognised model or test call."""

    api: str = Field(description="qualified name, e.g. statsmodels.formula.api.ols")
    family: str
    line: int
    dv_columns: list[str] = Field(default_factory=list)
    iv_columns: list[str] = Field(default_factory=list)
    group_columns: list[str] = Field(default_factory=list)
    formula: str = ""
    detail: str = ""


class AgentModel(BaseModel):
    """The agent's model as read from its code (or, for the llm judge, as the LLM described it).

    Attributes:
        family: a :class:`~evaluation.specs.ModelFamily` value, ``""`` when no model was recognised.
        specification: a one-line description (family, API, formula) used in prompts and results.
        columns: every column the model uses (DV, predictors, groups), as named in the final frame.
        derived_in_model: columns the model function itself creates → the columns they are computed from.
        calls: every recognised call, the chosen one first.
        notes: why something could not be read (shown in the result).
    """

    family: str = ""
    specification: str = ""
    dv_columns: list[str] = Field(default_factory=list)
    iv_columns: list[str] = Field(default_factory=list)
    group_columns: list[str] = Field(default_factory=list)
    columns: list[str] = Field(default_factory=list)
    derived_in_model: dict[str, list[str]] = Field(default_factory=dict)
    calls: list[ModelCall] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    source: str = Field(default="static", description="static | llm")


def _ordered(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def _names_in(code: str) -> list[str]:
    """Column names in one formula factor such as ``np.log(alldeaths + 1)`` or ``C(category)``."""
    try:
        tree = ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        return [t for t in re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", code) if t not in _FORMULA_WORDS]
    out: list[str] = []
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    attrs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Q" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            out.append(node.args[0].value)
        elif isinstance(node, ast.Name) and id(node) not in funcs and id(node) not in attrs \
                and node.id not in _FORMULA_WORDS:
            out.append(node.id)
    return out


def formula_columns(formula: str) -> tuple[list[str], list[str]]:
    """(DV columns, predictor columns) of a patsy/R-style formula; lme4 ``(1|g)`` and linearmodels extras too."""
    lhs, _, rhs = formula.partition("~")
    if not _:
        lhs, rhs = "", formula
    extra: list[str] = []
    # lme4 random effects (1 + x | g) and linearmodels instruments [endog ~ instr] are not patsy: take them apart
    for inner in re.findall(r"\(([^()]*\|[^()]*)\)", rhs):
        extra += [n for part in inner.split("|") for n in _names_in(part.replace("+", ",").replace("*", ","))
                  if not n.isdigit()]
    rhs = re.sub(r"\([^()]*\|[^()]*\)", "1", rhs)
    for inner in re.findall(r"\[([^\]]*)\]", rhs):
        extra += [n for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", inner) if n not in _FORMULA_WORDS]
    rhs = re.sub(r"\[[^\]]*\]", "1", rhs)
    try:
        from patsy import ModelDesc  # statsmodels' own formula parser

        desc = ModelDesc.from_formula(f"{lhs} ~ {rhs}" if lhs.strip() else f"~ {rhs}")
        dv = [n for t in desc.lhs_termlist for f in t.factors for n in _names_in(f.name())]
        iv = [n for t in desc.rhs_termlist for f in t.factors for n in _names_in(f.name())]
    except Exception:  # noqa: BLE001 - patsy raises PatsyError and others on odd formulas; fall back to tokens
        dv = [n for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", lhs) if n not in _FORMULA_WORDS]
        iv = [n for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rhs) if n not in _FORMULA_WORDS]
    return _ordered(dv), _ordered(iv + extra)


# --------------------------------------------------------------------------------------------- values


@dataclass
class _Cols:
    """A frame or series derived from ``df``: the columns it holds (``all_but`` for ``df.drop(...)``)."""

    cols: list[str] = field(default_factory=list)
    whole: bool = False  # the whole frame (``df`` itself)
    all_but: list[str] = field(default_factory=list)


@dataclass
class _Str:
    value: str


@dataclass
class _Strs:
    values: list[str]


@dataclass
class _Estimator:
    api: str
    family: ModelFamily


@dataclass
class _Fitted:
    call: ModelCall


@dataclass
class _Family:
    family: ModelFamily
    detail: str


_Value = _Cols | _Str | _Strs | _Estimator | _Fitted | _Family | None


class _Reader:
    def __init__(self, frame_columns: Iterable[str] | None) -> None:
        self.aliases = dict(_DEFAULT_ALIASES)
        self.env: dict[str, _Value] = {"df": _Cols(whole=True), "data": _Cols(whole=True)}
        self.known = set(frame_columns or ())
        self.calls: list[ModelCall] = []
        self.derived: dict[str, list[str]] = {}
        self.notes: list[str] = []

    # ------------------------------------------------------------------ names
    def qualname(self, node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return f"{base}.{node.attr}" if base else ""
        if isinstance(node, ast.Call):
            return self.qualname(node.func) + "()"
        return ""

    def imports(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif node.module:
            for a in node.names:
                self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"

    # ------------------------------------------------------------------ values
    def cols(self, node: ast.AST | None) -> list[str]:
        value = self.value(node) if node is not None else None
        if isinstance(value, _Cols):
            if value.whole or value.all_but:
                return [c for c in sorted(self.known) if c not in value.all_but]
            return value.cols
        if isinstance(value, _Str) and value.value in self.known:
            return [value.value]
        if isinstance(value, _Strs):
            return [v for v in value.values if not self.known or v in self.known]
        return []

    def strings(self, node: ast.AST) -> list[str] | None:
        v = self.value(node)
        if isinstance(v, _Str):
            return [v.value]
        if isinstance(v, _Strs):
            return v.values
        return None

    def value(self, node: ast.AST) -> _Value:  # noqa: C901 - one dispatch over expression kinds
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return _Str(node.value)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            parts = [self.value(e) for e in node.elts]
            if all(isinstance(p, _Str) for p in parts):
                return _Strs([p.value for p in parts])  # type: ignore[union-attr]
            return _Cols(_ordered(c for e in node.elts for c in self.cols(e)))
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if isinstance(node, ast.JoinedStr):
            text = ""
            for part in node.values:
                if isinstance(part, ast.Constant):
                    text += str(part.value)
                else:
                    inner = self.value(part.value) if isinstance(part, ast.FormattedValue) else None
                    if not isinstance(inner, _Str):
                        return _Cols(self.cols_of_children(node))
                    text += inner.value
            return _Str(text)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(left, _Str) and isinstance(right, _Str):
                return _Str(left.value + right.value)
            if isinstance(left, _Strs) and isinstance(right, _Strs):
                return _Strs(left.values + right.values)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Attribute):
            base = self.value(node.value)
            if isinstance(base, _Cols) and (node.attr in self.known or (
                    base.whole and not self.known and not node.attr.startswith("_")
                    and node.attr not in _FRAME_ATTRS)):
                return _Cols([node.attr])
            if isinstance(base, _Cols):
                return base  # df.values, X.T, ...
            return None
        if isinstance(node, ast.Call):
            return self.call(node)
        return _Cols(self.cols_of_children(node)) if self.cols_of_children(node) else None

    def cols_of_children(self, node: ast.AST) -> list[str]:
        return _ordered(c for child in ast.iter_child_nodes(node) for c in self.cols(child))

    def subscript(self, node: ast.Subscript) -> _Value:
        base = node.value
        index = node.slice
        if isinstance(base, ast.Attribute) and base.attr in ("loc", "iloc", "at"):
            base = base.value
            if isinstance(index, ast.Tuple) and len(index.elts) == 2:
                index = index.elts[1]
            else:
                return self.value(base)
        frame = self.value(base)
        if not isinstance(frame, _Cols):
            return None
        keys = self.strings(index)
        if keys is not None:
            return _Cols(keys)
        if isinstance(index, ast.Slice | ast.Compare | ast.BoolOp | ast.UnaryOp):
            return frame  # row selection
        inner = self.value(index)
        if isinstance(inner, _Cols) and not (inner.whole or inner.all_but):
            return frame  # boolean mask built from columns: a row filter
        return frame

    def call(self, node: ast.Call) -> _Value:  # noqa: C901 - one dispatch over call kinds
        qual = self.qualname(node.func)
        last = qual.rsplit(".", 1)[-1].lower()
        families = self.glm_family(node, qual)
        if families is not None:
            return families
        fitted = self.model_call(node, qual)
        if fitted is not None:
            return fitted
        if isinstance(node.func, ast.Attribute):
            receiver = self.value(node.func.value)
            attr = node.func.attr
            if attr == "fit" and isinstance(receiver, _Estimator):
                return self.fit_estimator(node, receiver)
            if attr == "fit" and isinstance(receiver, _Fitted):
                return receiver
            if isinstance(receiver, _Fitted):
                return receiver if attr in ("fit", "fit_regularized", "summary") else None
            if attr == "join" and isinstance(receiver, _Str) and node.args:
                parts = self.strings(node.args[0])
                if parts is not None:
                    return _Str(receiver.value.join(parts))
            if attr == "format" and isinstance(receiver, _Str):
                return receiver
            if isinstance(receiver, _Cols) and attr in ("corr", "corrwith"):
                call = ModelCall(api=f"pandas.DataFrame.{attr}", family=F.CORRELATION.value, line=node.lineno,
                                 iv_columns=self.cols(node.func.value))
                self.calls.append(call)
                return _Fitted(call)
            if isinstance(receiver, _Cols):
                if attr == "drop":
                    dropped = next((self.strings(k.value) for k in node.keywords if k.arg in ("columns", "labels")),
                                   None)
                    if dropped is None and node.args:
                        dropped = self.strings(node.args[0])
                    if dropped is not None:
                        if receiver.whole or receiver.all_but:
                            return _Cols(whole=False, all_but=receiver.all_but + dropped)
                        return _Cols([c for c in receiver.cols if c not in dropped])
                if attr in ("assign",):
                    return _Cols(receiver.cols + [k.arg for k in node.keywords if k.arg], whole=receiver.whole)
                return receiver  # dropna, astype, copy, values, to_numpy, ...
        if last == "add_constant" or last == "get_dummies":
            return _Cols(self.cols(node.args[0])) if node.args else None
        if last == "concat":
            return _Cols(self.cols(node.args[0]) if node.args else [])
        if last in ("column_stack", "hstack", "c_", "dmatrices", "dmatrix"):
            return _Cols(self.cols_of_children(node))
        if (qual.startswith("sklearn") or "." not in qual) and last in _SKLEARN:
            return _Estimator(qual, _SKLEARN[last])
        if qual.startswith(("sklearn", "pygam")) and qual.rsplit(".", 1)[-1][:1].isupper():
            return _Estimator(qual, F.OTHER)  # random forests, SVMs, GAMs ...: a model, not one of our families
        cols = self.cols_of_children(node)
        return _Cols(cols) if cols else None

    # ------------------------------------------------------------------ models
    def glm_family(self, node: ast.Call, qual: str) -> _Family | None:
        if ".families." not in f".{qual}" and not qual.startswith("families."):
            return None
        name = qual.rsplit(".", 1)[-1].lower()
        links = " ".join(self.qualname(k.value).lower().removesuffix("()") for k in node.keywords if k.arg == "link")
        links += " ".join(self.qualname(a).lower().removesuffix("()") for a in node.args)
        if name == "binomial":
            fam = F.PROBIT if "probit" in links else F.LOGISTIC
        elif name == "poisson":
            fam = F.POISSON
        elif name == "negativebinomial":
            fam = F.NEGATIVE_BINOMIAL
        elif name == "gaussian":
            fam = F.OLS if not links or "identity" in links else F.GLM
        else:
            fam = F.GLM
        return _Family(fam, qual.rsplit(".", 1)[-1] + (f"(link={links.rsplit('.', 1)[-1]})" if links else ""))

    def kw(self, node: ast.Call, *names: str) -> ast.AST | None:
        return next((k.value for k in node.keywords if k.arg in names), None)

    def model_call(self, node: ast.Call, qual: str) -> _Value:
        parts = qual.split(".")
        last = parts[-1].lower()
        from_formula = last == "from_formula"
        if from_formula:
            last = parts[-2].lower()
        if ".families" in qual:
            return None
        if "." not in qual and last in _BARE_STATSMODELS:
            qual = f"statsmodels.{qual}"
        if qual.startswith("statsmodels") and last in _STATSMODELS:
            family = _STATSMODELS[last]
        elif qual.startswith("scipy") and last in _SCIPY:
            family = _SCIPY[last]
        elif qual.startswith("linearmodels") and last in _LINEARMODELS:
            family = _LINEARMODELS[last]
        else:
            return None
        call = ModelCall(api=qual, family=family.value, line=getattr(node, "lineno", 0))
        is_formula_api = ".formula." in qual or from_formula
        if qual.startswith("scipy"):
            call.iv_columns = _ordered(c for a in node.args for c in self.cols(a))
            if last == "linregress" and len(node.args) >= 2:
                call.iv_columns, call.dv_columns = self.cols(node.args[0]), self.cols(node.args[1])
        elif last in ("anova_lm", "anovarm", "pairwise_tukeyhsd", "ttest_ind", "ztest", "proportions_ztest"):
            inner = [self.value(a) for a in node.args]
            fitted = next((v for v in inner if isinstance(v, _Fitted)), None)
            if fitted is not None:
                call.dv_columns, call.iv_columns = fitted.call.dv_columns, fitted.call.iv_columns
            else:
                call.iv_columns = _ordered(c for a in node.args for c in self.cols(a))
        elif is_formula_api:
            formula_node = node.args[0] if node.args else self.kw(node, "formula")
            formula = self.strings(formula_node) if formula_node is not None else None
            if formula:
                call.formula = formula[0]
                call.dv_columns, call.iv_columns = formula_columns(formula[0])
            else:
                self.notes.append(f"line {call.line}: the formula of {qual} is not a string the code spells out.")
        else:
            endog = node.args[0] if node.args else self.kw(node, "endog")
            exog = node.args[1] if len(node.args) > 1 else self.kw(node, "exog")
            call.dv_columns = self.cols(endog) if endog is not None else []
            call.iv_columns = self.cols(exog) if exog is not None else []
        groups = self.kw(node, "groups")
        if groups is not None:
            call.group_columns = self.strings(groups) or self.cols(groups)
            if not self.known:
                call.group_columns = call.group_columns or []
        re_formula = self.kw(node, "re_formula", "vc_formula")
        if re_formula is not None:
            text = self.strings(re_formula)
            if text:
                call.group_columns += formula_columns(text[0])[1]
        fam_node = self.kw(node, "family")
        if fam_node is not None and family in (F.GLM, F.OLS):
            fam = self.value(fam_node)
            if isinstance(fam, _Family):
                call.family, call.detail = fam.family.value, f"family={fam.detail}"
        elif last in ("glm",) and fam_node is None:
            call.family, call.detail = F.OLS.value, "family=Gaussian (default)"
        self.calls.append(call)
        return _Fitted(call)

    def fit_estimator(self, node: ast.Call, est: _Estimator) -> _Fitted:
        call = ModelCall(api=est.api, family=est.family.value, line=node.lineno)
        call.iv_columns = self.cols(node.args[0]) if node.args else self.cols(self.kw(node, "X"))
        if len(node.args) > 1:
            call.dv_columns = self.cols(node.args[1])
        else:
            y = self.kw(node, "y")
            call.dv_columns = self.cols(y) if y is not None else []
        self.calls.append(call)
        return _Fitted(call)

    # ------------------------------------------------------------------ statements
    def assign(self, target: ast.AST, value_node: ast.AST, value: _Value) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value_node, ast.Tuple | ast.List) and len(value_node.elts) == len(target.elts):
                for t, v in zip(target.elts, value_node.elts, strict=True):
                    self.assign(t, v, self.value(v))
            elif isinstance(value_node, ast.Call) and self.qualname(value_node.func).endswith("train_test_split"):
                arrays = [self.value(a) for a in value_node.args]
                for i, t in enumerate(target.elts):
                    if i // 2 < len(arrays):
                        self.assign(t, value_node, arrays[i // 2])
            else:
                for t in target.elts:
                    self.assign(t, value_node, value)
        elif isinstance(target, ast.Subscript):
            frame = self.value(target.value)
            keys = self.strings(target.slice)
            if isinstance(frame, _Cols) and keys:
                sources = self.cols(value_node)
                for k in keys:
                    if k not in self.known:
                        self.derived[k] = sources
                    self.known.add(k)
                if not frame.whole and isinstance(target.value, ast.Name):
                    self.env[target.value.id] = _Cols(_ordered(frame.cols + keys))

    def run(self, statements: list[ast.stmt]) -> _Value:
        returned: _Value = None
        for stmt in statements:
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                self.imports(stmt)
            elif isinstance(stmt, ast.Assign):
                value = self.value(stmt.value)
                for target in stmt.targets:
                    self.assign(target, stmt.value, value)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                self.assign(stmt.target, stmt.value, self.value(stmt.value))
            elif isinstance(stmt, ast.AugAssign | ast.Expr):
                self.value(stmt.value)
            elif isinstance(stmt, ast.Return) and stmt.value is not None:
                returned = self.value(stmt.value)
            elif isinstance(stmt, ast.FunctionDef):
                args = stmt.args.posonlyargs + stmt.args.args
                if args and args[0].arg != "df":
                    self.env[args[0].arg] = _Cols(whole=True)
                inner = self.run(stmt.body)
                returned = returned or inner
            elif isinstance(stmt, ast.If | ast.For | ast.While | ast.With | ast.Try):
                for block in ("body", "orelse", "finalbody"):
                    returned = self.run(getattr(stmt, block, []) or []) or returned
                for handler in getattr(stmt, "handlers", []) or []:
                    self.run(handler.body)
        return returned


_FRAME_ATTRS = {"values", "shape", "columns", "index", "dtypes", "T", "loc", "iloc", "at", "iat", "size", "empty",
                "ndim", "str", "dt", "cat", "plot"}


def _from_text(code: str, note: str) -> AgentModel:
    """Code that does not parse: name the family from the first recognisable API name, columns unknown."""
    for m in re.finditer(r"\b(?:smf|sm|statsmodels(?:\.\w+)*)\.(\w+)(?:\.from_formula)?\s*\(", code):
        family = _STATSMODELS.get(m.group(1).lower())
        if family is not None:
            call = ModelCall(api=m.group(0).rstrip("( "), family=family.value, line=code[:m.start()].count("\n") + 1,
                             detail="read from the text")
            return AgentModel(family=family.value, specification=f"{family.value} ({call.api}, read from the text)",
                              calls=[call], notes=[note, "family read from the text; columns unknown."])
    return AgentModel(notes=[note])


def analyse_model_code(code: str, *, frame_columns: Iterable[str] | None = None) -> AgentModel:
    """Read the model family and columns from model code (a ``def model(df)`` or its extracted body).

    Args:
        code: the agent's ``m_code`` (or any statements using ``df``).
        frame_columns: the columns of the frame the model receives, when known; they resolve ``df.col``
            attributes and ``df.drop(...)`` complements.

    Returns:
        An :class:`AgentModel`; ``family == ""`` with a note when nothing recognisable is fitted. Never raises on
        code that parses; a syntax error becomes a note too.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        note = f"the model code does not parse: {exc.msg} at line {exc.lineno}."
        return _from_text(code, note)
    reader = _Reader(frame_columns)
    returned = reader.run(tree.body)
    if not reader.calls:
        return AgentModel(notes=reader.notes + ["no statsmodels, scikit-learn, scipy.stats or linearmodels model "
                                                "or test call was found in the model code."],
                          derived_in_model=reader.derived)
    main = [c for c in reader.calls if F(c.family) not in _AUXILIARY]
    if isinstance(returned, _Fitted) and returned.call in reader.calls and (
            F(returned.call.family) not in _AUXILIARY or not main):
        chosen = returned.call
    else:
        chosen = (main or reader.calls)[-1]
    calls = [chosen] + [c for c in reader.calls if c is not chosen]
    spec_cols = " + ".join(chosen.iv_columns) or "?"
    short_api = chosen.api.replace("statsmodels.formula.api", "smf").replace("statsmodels.api", "sm")
    specification = f"{chosen.family} ({short_api}" + (f", {chosen.detail}" if chosen.detail else "") + "): " + (
        chosen.formula or f"{' + '.join(chosen.dv_columns) or '?'} ~ {spec_cols}")
    if chosen.group_columns:
        specification += f" | groups: {', '.join(chosen.group_columns)}"
    return AgentModel(
        family=chosen.family, specification=specification, dv_columns=chosen.dv_columns,
        iv_columns=chosen.iv_columns, group_columns=chosen.group_columns,
        columns=_ordered(chosen.dv_columns + chosen.iv_columns + chosen.group_columns),
        derived_in_model=reader.derived, calls=calls, notes=reader.notes)
