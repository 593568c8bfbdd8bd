"""Starter datasets: three public datasets that ship with statsmodels, written as BLADE dataset folders.

The folders live in the repository under ``datasets/<name>/`` (``info.json`` + ``data.csv``) and are
registered on first start. :func:`build_starter_datasets` regenerates them from the installed statsmodels,
deterministically, so a test can check that the committed files are exactly what the code produces.
Regenerate with ``python -m curation.starters datasets``.

Each starter keeps the statsmodels table as it is, except that float columns holding only whole numbers are
written as integers (statsmodels loads some tables as all-float) and ``anes96``'s derived ``logpopul`` column
is left out (statsmodels' loader computes it; taking a log is an analysis decision for the analysts).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from curation.dataset_files import (
    CSV_FILENAME,
    INFO_FILENAME,
    frame_to_csv_bytes,
    read_csv_with_form,
    write_blade_folder,
)

__all__ = ["STARTERS", "StarterSpec", "build_starter_datasets", "list_starter_dirs"]

log = logging.getLogger(__name__)

#: Starter CSVs are small by design; the limit only guards against a statsmodels change.
_STARTER_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class StarterSpec:
    """What a starter is made of: a table loader and the words that go into its ``info.json``."""

    name: str
    research_question: str
    description: str
    column_descriptions: Mapping[str, str]
    load: Callable[[], pd.DataFrame]


def _whole_floats_as_int(frame: pd.DataFrame) -> pd.DataFrame:
    """Float columns whose values are all whole numbers (and present) become int64."""
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if pd.api.types.is_float_dtype(values.dtype) and values.notna().all() and (values % 1 == 0).all():
            out[column] = values.astype("int64")
    return out.reset_index(drop=True)


def _load_randhie() -> pd.DataFrame:
    from statsmodels.datasets import randhie

    return _whole_floats_as_int(randhie.load_pandas().data)


def _load_fair() -> pd.DataFrame:
    from statsmodels.datasets import fair

    return _whole_floats_as_int(fair.load_pandas().data)


def _load_anes96() -> pd.DataFrame:
    from statsmodels.datasets import anes96

    return _whole_floats_as_int(anes96.load_pandas().data.drop(columns=["logpopul"]))


_SELF_LR_SCALE = (
    "1 = extremely liberal, 2 = liberal, 3 = slightly liberal, 4 = moderate, 5 = slightly conservative, "
    "6 = conservative, 7 = extremely conservative"
)

_INCOME_BRACKETS = (
    "1 = none or less than $2,999; 2 = $3,000-$4,999; 3 = $5,000-$6,999; 4 = $7,000-$8,999; "
    "5 = $9,000-$9,999; 6 = $10,000-$10,999; 7 = $11,000-$11,999; 8 = $12,000-$12,999; "
    "9 = $13,000-$13,999; 10 = $14,000-$14,999; 11 = $15,000-$16,999; 12 = $17,000-$19,999; "
    "13 = $20,000-$21,999; 14 = $22,000-$24,999; 15 = $25,000-$29,999; 16 = $30,000-$34,999; "
    "17 = $35,000-$39,999; 18 = $40,000-$44,999; 19 = $45,000-$49,999; 20 = $50,000-$59,999; "
    "21 = $60,000-$74,999; 22 = $75,000-$89,999; 23 = $90,000-$104,999; 24 = $105,000 and over"
)

STARTERS: tuple[StarterSpec, ...] = (
    StarterSpec(
        name="rand_hie",
        research_question=(
            "Do people whose health insurance makes them pay a larger share of their medical bills (a higher "
            "coinsurance rate) make fewer outpatient visits to a doctor?"
        ),
        description=(
            "Use of outpatient medical care in the RAND Health Insurance Experiment (HIE), in which the RAND "
            "Corporation assigned families in the United States to insurance plans that differed in how much "
            "of the bill the family paid itself (the coinsurance rate). Each of the 20,190 rows is one "
            "person-year; the outcome is the number of face-to-face visits to a medical doctor, and the other "
            "columns describe the person's plan and baseline health. "
            "Source: the data was collected by the RAND Corporation as part of the Health Insurance Experiment "
            "(http://www.rand.org/health/projects/hie.html) and used in Cameron, A.C. and Trivedi, P.K. 2005, "
            "Microeconometrics: Methods and Applications, Cambridge: New York; it was obtained from "
            "http://cameron.econ.ucdavis.edu/mmabook/mmadata.html. It is a subset of the original data and "
            "varies slightly from what Cameron and Trivedi report. Distributed with statsmodels "
            '(statsmodels.datasets.randhie), which states: "This is in the public domain."'
        ),
        column_descriptions={
            "mdvis": "Number of outpatient (face-to-face) visits to a medical doctor during the year; a count "
            "from 0 to 77, most people have few visits.",
            "lncoins": "Natural log of (coinsurance rate + 1), where the coinsurance rate is the percentage "
            "(0 to 100) of the medical bill that the person's plan made them pay. The data hold five levels: "
            "0 (free care), 3.258 (25%), 3.932 (50%), 4.564 (95%) and 4.615 (100%).",
            "idp": "1 if the person was on the individual deductible plan, 0 otherwise.",
            "lpi": "Natural log of the annual participation incentive payment, computed as "
            "ln(max(1, payment)); 0 means a payment of at most 1 dollar.",
            "fmde": "0 if idp = 1; otherwise ln(max(1, MDE / (0.01 * coinsurance rate))), where MDE is the "
            "plan's maximum dollar expenditure (the cap on the family's yearly out-of-pocket spending).",
            "physlm": "Physical limitation at baseline: 1 if the person has a physical limitation, 0 if not. "
            "About 1,000 rows hold a value between 0 and 1, which the source does not explain (probably "
            "imputed).",
            "disea": "Chronic disease measure at baseline, described by the source as the number of chronic "
            "diseases; most values are not whole numbers (mean about 11), so treat it as an index.",
            "hlthg": "1 if the person rates their health as good, 0 otherwise. With hlthf and hlthp this "
            "codes self-rated health; the omitted category is excellent health.",
            "hlthf": "1 if the person rates their health as fair, 0 otherwise (omitted category: excellent).",
            "hlthp": "1 if the person rates their health as poor, 0 otherwise (omitted category: excellent).",
        },
        load=_load_randhie,
    ),
    StarterSpec(
        name="affairs_redbook",
        research_question=(
            "Is a happier marriage, as rated by the respondent, associated with less time spent in "
            "extramarital affairs?"
        ),
        description=(
            "Survey answers of 6,366 married women about their marriage, their background and the time they "
            "spent in extramarital affairs: the Redbook magazine survey (1974) that Ray Fair used to explain "
            "how a person divides time among work, their spouse and a paramour. About two thirds of the "
            "respondents report no affairs, so the outcome has a large mass at zero (statsmodels uses it as "
            "an example of regression with censored data). Age, years married and number of children are "
            "grouped into intervals and coded by approximate values (see the paper). "
            'Source: Fair, Ray. 1978. "A Theory of Extramarital Affairs," Journal of Political Economy, '
            "February, 45-61; the data is available at http://fairmodel.econ.yale.edu/rayfair/pdf/2011b.htm. "
            "Distributed with statsmodels (statsmodels.datasets.fair), whose copyright note reads: "
            '"Included with permission of the author."'
        ),
        column_descriptions={
            "rate_marriage": "The respondent's rating of her marriage: 1 = very poor, 2 = poor, 3 = fair, "
            "4 = good, 5 = very good.",
            "age": "Age in years, grouped and coded as 17.5, 22, 27, 32, 37 or 42.",
            "yrs_married": "Number of years married, grouped into intervals and coded as 0.5, 2.5, 6, 9, 13, "
            "16.5 or 23 (interval approximations; see Fair 1978).",
            "children": "Number of children; 5.5 stands for the top interval.",
            "religious": "How religious the respondent is: 1 = not, 2 = mildly, 3 = fairly, 4 = strongly.",
            "educ": "Level of education: 9 = grade school, 12 = high school, 14 = some college, "
            "16 = college graduate, 17 = some graduate school, 20 = advanced degree.",
            "occupation": "The respondent's occupation: 1 = student; 2 = farming, agriculture, semi-skilled or "
            "unskilled worker; 3 = white-collar; 4 = teacher, counselor, social worker, nurse, artist, "
            "writer, technician or skilled worker; 5 = managerial, administrative or business; "
            "6 = professional with an advanced degree.",
            "occupation_husb": "The husband's occupation, coded like occupation.",
            "affairs": "Fair's measure of the time spent in extramarital affairs; 0 for respondents without "
            "affairs, otherwise a positive number (up to about 57.6), strongly skewed to the right.",
        },
        load=_load_fair,
    ),
    StarterSpec(
        name="anes96",
        research_question=(
            "Are voters more likely to expect to vote for the 1996 U.S. presidential candidate (Bill Clinton or "
            "Bob Dole) whose political position they see as closer to their own?"
        ),
        description=(
            "944 respondents of the 1996 American National Election Study who said whom they expected to "
            "vote for in the presidential election (Bill Clinton or Bob Dole): their party identification, "
            "their own position on a 7-point liberal-conservative scale, where they place each candidate on "
            "the same scale, and demographics. statsmodels' loader also derives logpopul = log(popul + 0.1); "
            "it is left out here so that any transformation stays the analyst's decision. "
            'Source: The American National Election Studies, http://www.electionstudies.org/ ("This data is '
            'a subset of the American National Election Studies of 1996"). Distributed with statsmodels '
            '(statsmodels.datasets.anes96), which states: "This is public domain."'
        ),
        column_descriptions={
            "popul": "Population of the respondent's census place, in thousands.",
            "TVnews": "Number of times per week the respondent watches TV news (0 to 7).",
            "selfLR": f"The respondent's own political leaning, from left to right: {_SELF_LR_SCALE}.",
            "ClinLR": "Where the respondent places Bill Clinton's political leaning, on the same scale as "
            f"selfLR: {_SELF_LR_SCALE}.",
            "DoleLR": "Where the respondent places Bob Dole's political leaning, on the same scale as "
            f"selfLR: {_SELF_LR_SCALE}.",
            "PID": "Party identification: 0 = strong Democrat, 1 = weak Democrat, 2 = independent leaning "
            "Democrat, 3 = independent, 4 = independent leaning Republican, 5 = weak Republican, "
            "6 = strong Republican.",
            "age": "Age of the respondent in years.",
            "educ": "Education: 1 = grades 1-8, 2 = some high school, 3 = high school graduate, "
            "4 = some college, 5 = college degree, 6 = master's degree, 7 = PhD.",
            "income": f"Household income bracket: {_INCOME_BRACKETS}.",
            "vote": "Expected vote in the 1996 presidential election: 0 = Clinton, 1 = Dole.",
        },
        load=_load_anes96,
    ),
)


def build_starter_datasets(dest: Path) -> list[Path]:
    """Write every starter as ``dest/<name>/info.json`` + ``data.csv``; returns the folders.

    The output depends only on the installed statsmodels data and this module: profiles use a fixed
    sample seed and JSON is written in BLADE's formatting, so rebuilding gives the same bytes.

    Raises:
        ValueError: a starter's description does not cover exactly its table's columns.
    """
    folders = []
    for spec in STARTERS:
        frame = spec.load()
        columns = [str(c) for c in frame.columns]
        if sorted(columns) != sorted(spec.column_descriptions):
            raise ValueError(
                f"starter {spec.name}: columns {columns} but descriptions for {sorted(spec.column_descriptions)}"
            )
        bundle = read_csv_with_form(
            frame_to_csv_bytes(frame),
            filename=CSV_FILENAME,
            name=spec.name,
            research_question=spec.research_question,
            description=spec.description,
            column_descriptions=spec.column_descriptions,
            max_bytes=_STARTER_MAX_BYTES,
            source="starter",
        )
        folders.append(write_blade_folder(bundle, Path(dest) / spec.name))
        log.info("wrote starter %s (%d rows x %d columns)", spec.name, bundle.num_rows, bundle.num_columns)
    return folders


def list_starter_dirs(root: Path) -> list[Path]:
    """The dataset folders (with ``info.json`` and ``data.csv``) directly under ``root``, sorted by name."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and (p / INFO_FILENAME).is_file() and (p / CSV_FILENAME).is_file()
    )


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    build_starter_datasets(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("datasets"))
