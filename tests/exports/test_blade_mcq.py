"""BLADE's mcq_dataset.json: byte-for-byte round trips of the shipped files, the documented counts, answer
lookup with duplicate options, and errors that name the file and the JSON path."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exports.blade_mcq import (
    BladeMCQs,
    MCQCvar,
    MCQCvarChoice,
    MCQTransform,
    MCQTransformChoice,
    McType,
    correct_index,
    parse_mcqs,
    read_mcqs,
    write_mcqs,
)
from exports.errors import BladeFormatError

DATASETS = ["affairs", "amtl", "boxes", "caschools", "crofoot", "fish", "hurricane", "panda_nuts", "reading"]

# blade-reference §6: (MCQ cvar, MCQ transform)
COUNTS = {
    "affairs": (1, 32),
    "amtl": (0, 12),
    "boxes": (0, 17),
    "caschools": (2, 3),
    "crofoot": (0, 11),
    "fish": (0, 15),
    "hurricane": (2, 3),
    "panda_nuts": (1, 23),
    "reading": (6, 14),
}


def _path(shared_blade: Path, name: str) -> Path:
    return shared_blade / "datasets" / name / "mcq_dataset.json"


@pytest.mark.parametrize("name", DATASETS)
def test_shipped_file_is_written_back_byte_for_byte(shared_blade: Path, name: str) -> None:
    path = _path(shared_blade, name)
    assert write_mcqs(read_mcqs(path)) == path.read_bytes()


@pytest.mark.parametrize("name", DATASETS)
def test_counts_match_blade_reference_section_6(shared_blade: Path, name: str) -> None:
    mcqs = read_mcqs(_path(shared_blade, name))
    assert (len(mcqs.mcqs_cvar), mcqs.num_transform) == COUNTS[name]
    for concept, questions in mcqs.mcqs_transform.items():
        assert all(q.coneptual_var_str == q.conceptual_var_str == concept for q in questions)
    for mcq in mcqs.all_mcqs():
        index = correct_index(mcq)
        assert mcq.options[index].model_dump() == mcq.correct_answer.model_dump()


def test_shape_over_the_nine_files(shared_blade: Path) -> None:
    files = [read_mcqs(_path(shared_blade, name)) for name in DATASETS]
    cvar = [q for mcqs in files for q in mcqs.mcqs_cvar]
    transform = [q for mcqs in files for questions in mcqs.mcqs_transform.values() for q in questions]
    assert len(cvar) == 12 and len(transform) == 130
    # 5.1: cvar MCQs are all select_neg with 3 options
    assert {(q.mc_type, len(q.options)) for q in cvar} == {("select_neg", 3)}
    assert Counter(len(q.options) for q in transform).keys() <= {2, 3, 4}
    assert all(isinstance(q, MCQTransform) for q in transform)


def test_the_json_is_indented_ascii_without_a_final_newline(shared_blade: Path) -> None:
    raw = _path(shared_blade, "affairs").read_bytes()
    assert raw.startswith(b'{\n  "mcqs_cvar": [\n') and not raw.endswith(b"\n")
    mcqs = read_mcqs(_path(shared_blade, "affairs"))
    mcqs.mcqs_cvar[0].options[0].rationale = "Größe – 🟨"
    written = write_mcqs(mcqs)
    assert b"Gr\\u00f6\\u00dfe \\u2013 \\ud83d\\udfe8" in written
    assert read_mcqs(written).mcqs_cvar[0].options[0].rationale == "Größe – 🟨"


# ------------------------------------------------------------------------------------------ answers


def _cvar_choice(text: str, llm: bool = False) -> dict[str, Any]:
    return {"cvar_str": text, "rationale": "why", "is_llm_generated": llm}


def test_duplicate_options_give_the_first_match() -> None:
    mcq = MCQCvar.model_validate(
        {
            "mc_type": "select_neg",
            "options": [_cvar_choice("IV: a"), _cvar_choice("DV: b"), _cvar_choice("DV: b")],
            "correct_answer": _cvar_choice("DV: b"),
        }
    )
    assert correct_index(mcq) == 1


def test_an_answer_equal_to_no_option_is_an_error() -> None:
    mcq = MCQCvar.model_validate(
        {
            "mc_type": "select_neg",
            "options": [_cvar_choice("IV: a"), _cvar_choice("DV: b")],
            "correct_answer": _cvar_choice("DV: b", llm=True),  # differs only in the flag
        }
    )
    with pytest.raises(
        BladeFormatError, match=r"x.json, field mcqs_cvar\[0\].correct_answer: .* none of the 2"
    ):
        correct_index(mcq, label="x.json", where="mcqs_cvar[0]")


def test_key_order_does_not_matter_for_answer_equality() -> None:
    mcq = MCQTransform.model_validate(
        {
            "coneptual_var_str": "Age",
            "mc_type": "select_pos",
            "options": [
                {"code": "a", "rationale": "r", "is_llm_generated": True},
                {"code": "b", "rationale": "r", "is_llm_generated": False},
            ],
            "correct_answer": {"is_llm_generated": False, "rationale": "r", "code": "b"},
        }
    )
    assert correct_index(mcq) == 1


# ------------------------------------------------------------------------------------------ rejections


def _load(shared_blade: Path, name: str = "hurricane") -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_path(shared_blade, name).read_text(encoding="utf-8"))
    return data


def _error(data: Any, label: str = "up/mcq_dataset.json") -> BladeFormatError:
    content = data if isinstance(data, bytes) else json.dumps(data, indent=2).encode()
    with pytest.raises(BladeFormatError) as info:
        parse_mcqs(content, label=label)
    assert label in str(info.value)
    return info.value


def test_bad_json_names_line_and_column(shared_blade: Path) -> None:
    broken = _path(shared_blade, "hurricane").read_bytes().replace(b'"mc_type":', b'"mc_type"', 1)
    message = str(_error(broken))
    assert "not valid JSON: Expecting ':' delimiter at line 4, column 17" in message


def test_correct_answer_not_among_options(shared_blade: Path) -> None:
    data = _load(shared_blade)
    concept = next(iter(data["mcqs_transform"]))
    data["mcqs_transform"][concept][0]["correct_answer"]["code"] += "\n# edited"
    error = _error(data)
    assert error.first.field == f"mcqs_transform[{json.dumps(concept)}][0].correct_answer"
    assert "copy of none of the" in str(error)


def test_key_and_conceptual_var_string_must_agree(shared_blade: Path) -> None:
    data = _load(shared_blade)
    concept = next(iter(data["mcqs_transform"]))
    data["mcqs_transform"][concept][0]["coneptual_var_str"] = "Something else"
    error = _error(data)
    assert error.first.field == f"mcqs_transform[{json.dumps(concept)}][0].coneptual_var_str"
    assert "differs from the key" in str(error)


def test_wrong_types_and_missing_fields_name_the_json_path(shared_blade: Path) -> None:
    data = _load(shared_blade)
    data["mcqs_cvar"][1]["options"][2]["is_llm_generated"] = "yes"
    data["mcqs_cvar"][0]["mc_type"] = "select_best"
    del data["mcqs_cvar"][0]["correct_answer"]
    error = _error(data)
    fields = {p.field: p.message for p in error.problems}
    assert "must be true or false" in fields["mcqs_cvar[1].options[2].is_llm_generated"]
    assert "must be one of 'select_pos' or 'select_neg'" in fields["mcqs_cvar[0].mc_type"]
    assert fields["mcqs_cvar[0].correct_answer"].endswith("is missing.")


def test_not_an_object_and_repeated_keys() -> None:
    assert "not a list" in str(_error([]))
    repeated = b'{"mcqs_cvar": [], "mcqs_transform": {}, "mcqs_cvar": []}'
    assert "'mcqs_cvar' appears twice" in str(_error(repeated))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BladeFormatError, match="does not exist"):
        read_mcqs(tmp_path / "mcq_dataset.json")


# ------------------------------------------------------------------------------------------ properties

_TEXT = st.text(max_size=20) | st.sampled_from(["IV: 🟨 age", "df['x'] = 1\n", "Größe – ok"])
_CVAR_CHOICE = st.builds(MCQCvarChoice, cvar_str=_TEXT, rationale=_TEXT, is_llm_generated=st.booleans())
_T_CHOICE = st.builds(MCQTransformChoice, code=_TEXT, rationale=_TEXT, is_llm_generated=st.booleans())
_MC_TYPE: st.SearchStrategy[McType] = st.sampled_from(["select_pos", "select_neg"])


@st.composite
def _cvar_mcq(draw: st.DrawFn) -> MCQCvar:
    options = draw(st.lists(_CVAR_CHOICE, min_size=2, max_size=4))
    answer = draw(st.sampled_from(options))
    return MCQCvar(mc_type=draw(_MC_TYPE), options=options, correct_answer=answer.model_copy())


@st.composite
def _transform_mcqs(draw: st.DrawFn) -> dict[str, list[MCQTransform]]:
    result: dict[str, list[MCQTransform]] = {}
    for concept in draw(st.lists(_TEXT, max_size=3, unique=True)):
        questions = []
        for _ in range(draw(st.integers(1, 2))):
            options = draw(st.lists(_T_CHOICE, min_size=2, max_size=4))
            questions.append(
                MCQTransform(
                    coneptual_var_str=concept,
                    mc_type=draw(_MC_TYPE),
                    options=options,
                    correct_answer=draw(st.sampled_from(options)).model_copy(),
                )
            )
        result[concept] = questions
    return result


@settings(max_examples=60, deadline=None)
@given(st.lists(_cvar_mcq(), max_size=3), _transform_mcqs())
def test_write_then_read_is_identity(cvars: list[MCQCvar], transforms: dict[str, list[MCQTransform]]) -> None:
    mcqs = BladeMCQs(mcqs_cvar=cvars, mcqs_transform=transforms)
    written = write_mcqs(mcqs)
    again = read_mcqs(written)
    assert again.model_dump() == mcqs.model_dump()
    assert write_mcqs(again) == written
