"""Placeholders for the decision forms, built from the dataset at hand so no dataset's example shows on another.

They are written as examples ("e.g. ...", code as comments) so they never look like pre-filled content.
"""

from __future__ import annotations

from dataclasses import dataclass

from curation.models import Dataset


@dataclass(frozen=True)
class Examples:
    concept: str
    transform_name: str
    transform_code: str
    condition: str
    model_spec: str
    model_code: str


def _numeric_columns(dataset: Dataset) -> list[str]:
    return [str(f.get("column")) for f in dataset.dictionary
            if f.get("properties", {}).get("dtype") == "number" and str(f.get("column", "")).isidentifier()]


def examples_for(dataset: Dataset | None, transform_names: list[str] | None = None) -> Examples:
    numeric = _numeric_columns(dataset) if dataset is not None else []
    x = numeric[0] if numeric else "x"
    y = numeric[1] if len(numeric) > 1 else "y"
    other = (transform_names or ["other_step"])[0]
    return Examples(
        concept="e.g. the idea a column stands for, in words (not the column's name)",
        transform_name=f"e.g. log_{x}",
        transform_code=f"# pandas statements acting on df, for example:\n# df['log_{x}'] = np.log(df['{x}'] + 1)",
        condition=f"e.g. {other}.index == 0",
        model_spec=f"e.g. OLS of {y} on {x}",
        model_code=("# fit the model on df, for example:\n# import statsmodels.formula.api as smf\n"
                    f"# model = smf.ols('{y} ~ {x}', data=df).fit()"),
    )
