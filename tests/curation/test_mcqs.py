"""MCQ generation on hand-built data with known keys and on every shared BLADE dataset; the audit on generated
and imported MCQs; the CLI. Services on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import PermissionDenied
from curation.models import Alternative, Dataset, Role, Stage, Transform
from curation.models import ConceptualVariable as Variable
from curation.services.alternatives import store_alternative
from curation.services.annotation import submit_analysis
from curation.services.blade_import import import_blade
from curation.services.ground_truth import ground_truth, normal_concept, same_concept
from curation.services.mcq_audit import audit_mcqs
from curation.services.mcq_generate import MCQGenerationError, MCQSettings, generate_mcqs
from curation.services.mcq_store import dataset_mcqs, mcq_by_id
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from exports.mcq_part import MCQPart
from tests import factories as f

SQRT = "df['deaths_sqrt'] = np.sqrt(df['deaths'])"
BAD = "df['deaths_bad'] = df['deaths'] * df['masfem']"
MIXED = "df['deaths_rank'] = df['deaths'].rank()"


@pytest.fixture
def judged(engine, store):
    """Three analysts with the same decisions; peers' votes make ana's decisions justifiable, an LLM transform
    for 'deaths' justifiable, one unjustifiable, one contested, and an LLM variable not derivable."""
    ana, bob, cid = (f.user(engine, n) for n in ("ana", "bob", "cid"))
    cur = f.user(engine, "cur", Role.CURATOR)
    ds = f.dataset(engine, store, assign=[ana, bob, cid])
    ids = {}
    for u in (ana, bob, cid):
        ids[u.username] = f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    with session_scope(engine) as s:
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
        dv = ids["ana"]["dv"]

        def alt(kind, payload):
            return store_alternative(session=s, dataset_id=ds.id, kind=kind, source="llm", proposed_by_id=None, seed_id=dv if
                                     kind == "transform" else None, payload=payload, extra={}).alternative.id

        t = {"concept": "deaths", "variable_type": "DV", "rationale": "r", "parent_ids": []}
        alts = {"sqrt": alt("transform", {**t, "code": SQRT, "output_col": "deaths_sqrt"}),
                "bad": alt("transform", {**t, "code": BAD, "output_col": "deaths_bad"}),
                "mixed": alt("transform", {**t, "code": MIXED, "output_col": "deaths_rank"}),
                "category": alt("variable", {"variable_type": "Control", "concept": "storm category",
                                             "interaction": False, "on": "", "rationale": "r", "columns": ["wind"]})}
        a = ids["ana"]
        plan = {("variable", a["iv"]): ("yes", "yes", "yes"), ("variable", a["dv"]): ("yes", "yes", "yes"),
                ("transform", a["transform"]): ("yes", "yes", "yes"),
                ("alternative", alts["sqrt"]): ("yes", "yes", "yes"), ("alternative", alts["bad"]): ("no", "no", "yes"),
                ("alternative", alts["mixed"]): ("yes", "no", "unsure")}
        voters = {"variable": (bob, cid), "transform": (bob, cid), "alternative": (ana, bob, cid)}
        for (kind, target), answers in plan.items():
            for voter, answer in zip(voters[kind], answers, strict=False):
                if answer == "unsure":
                    cast_vote(session=s, actor=voter, target_kind=kind, target_id=target, question="is_suited_to_cv",
                              answer="unsure")
                    continue
                cast_vote(session=s, actor=voter, target_kind=kind, target_id=target, question="justifiable",
                          answer=answer, explanation="" if answer == "yes" else "does not measure deaths")
        for voter in (ana, bob, cid):
            cast_vote(session=s, actor=voter, target_kind="alternative", target_id=alts["category"],
                      question="can_derive_from_data", answer="no")
    return {"engine": engine, "ds": ds, "cur": cur, "ana": ana, "ids": ids, "alts": alts}


def _generate(t, seed=0, actor="cur"):
    with session_scope(t["engine"]) as s:
        return generate_mcqs(session=s, actor=t[actor], dataset_id=t["ds"].id, settings=MCQSettings(seed=seed))


def _key(q):
    return q["options"][q["correct_index"]]


def _targets(option):
    return [i["target_id"] for i in option["extra"]["provenance"]["items"]]


def test_generation_on_hand_built_data_has_the_known_keys(judged):
    t, alts = judged, judged["alts"]
    report = _generate(t, seed=7)
    assert report.counts() == {"transform/select_neg": 1, "transform/select_pos": 2, "variable/select_neg": 1,
                               "variable/select_pos": 2}
    by = {(q["kind"], q["mc_type"], _key(q)["text"].strip()): q for q in report.mcqs}
    path = "df['log_deaths'] = np.log(df['deaths'] + 1)"
    # select_pos for 'deaths': the analysts' path and the sqrt alternative, each against the voted-down transform
    for key_text, source_kind in ((path, "path"), (SQRT, "alternative")):
        q = by[("transform", "select_pos", key_text)]
        assert q["concept"] == "deaths" and len(q["options"]) == 2 and _key(q)["source_kind"] == source_kind
        (other,) = [o for o in q["options"] if o is not _key(q)]
        assert other["text"] == BAD and other["negative_reason"] == "voted_unjustifiable"
        assert other["extra"]["provenance"]["role"] == "distractor"
        assert "voted unjustifiable" in other["extra"]["provenance"]["why"]
    q = by[("transform", "select_neg", BAD)]
    assert _key(q)["negative_reason"] == "voted_unjustifiable" and _targets(_key(q)) == [alts["bad"]]
    assert sorted(o["text"].strip() for o in q["options"]) == sorted([BAD, SQRT, path])
    assert _key(q)["is_llm_generated"] and _key(q)["extra"]["provenance"]["items"][0]["tally"] == {
        "justifiable": 1, "unjustifiable": 2, "unsure": 0}
    q = by[("variable", "select_neg", "Control: storm category.")]
    assert _key(q)["negative_reason"] == "not_derivable" and len(q["options"]) == 3
    assert {o["text"] for o in q["options"]} == {"Control: storm category.", "IV: femininity of name", "DV: deaths"}
    assert {_key(q)["text"] for q in report.mcqs if q["mc_type"] == "select_pos" and q["kind"] == "variable"} == {
        "IV: femininity of name", "DV: deaths"}
    # the contested alternative is never an option, so never a key
    everything = [tid for q in report.mcqs for o in q["options"] for tid in _targets(o)]
    assert alts["mixed"] not in everything and alts["sqrt"] in everything
    # the path option records the analysts' transform, its votes and the rule
    q = by[("transform", "select_pos", path)]
    item = _key(q)["extra"]["provenance"]["items"][0]
    assert item["target_kind"] == "transform" and item["rule"] == "blade@1" and item["status"] == "justifiable"
    assert {v["answer"] for v in item["votes"]} == {"yes"} and len(item["votes"]) == 2
    with session_scope(t["engine"]) as s:
        stored = dataset_mcqs(session=s, dataset_id=t["ds"].id)
        assert len(stored) == 6 and all(m.extra["seed"] == 7 and m.extra["source"] == "generated" for m in stored)


def test_generation_is_deterministic_for_a_seed_and_only_for_curators(judged):
    first = _generate(judged, seed=3)
    again = _generate(judged, seed=3)
    assert json.dumps(first.mcqs, sort_keys=True) == json.dumps(again.mcqs, sort_keys=True)
    assert again.removed == 6 and again.created == 6  # unreviewed MCQs are replaced, not duplicated
    orders = {json.dumps([[o["text"] for o in q["options"]] for q in _generate(judged, seed=s).mcqs])
              for s in range(8)}
    assert len(orders) > 1  # the seed drives the choice and order of options
    with pytest.raises(PermissionDenied):
        _generate(judged, actor="ana")


def test_too_few_judged_items_says_what_is_missing(engine, store):
    ana, cur = f.user(engine, "ana"), f.user(engine, "cur", Role.CURATOR)
    ds = f.dataset(engine, store, assign=[ana])
    f.full_analysis(engine, ana, ds.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=ds.id)
    with session_scope(engine) as s, pytest.raises(MCQGenerationError) as err:
        generate_mcqs(session=s, actor=cur, dataset_id=ds.id)
    message = str(err.value)
    assert "No MCQ can be built for 'storms'" in message
    assert "2 variable unjudged" in message and "1 transform unjudged" in message
    assert "need at least one justifiable and one unjustifiable variable" in message
    with session_scope(engine) as s:
        assert dataset_mcqs(session=s, dataset_id=None) == []


def test_the_audit_flags_keys_the_votes_overturned(judged):
    t = judged
    _generate(t, seed=1)
    with session_scope(t["engine"]) as s:
        clean = audit_mcqs(session=s, actor=t["cur"], dataset_id=t["ds"].id)
        assert clean.total == clean.checked == 6 and clean.findings == []
        with pytest.raises(PermissionDenied):
            audit_mcqs(session=s, actor=t["ana"], dataset_id=t["ds"].id)
    with session_scope(t["engine"]) as s:  # bob and cid change their minds: the voted-down transform is fine
        bob, cid = (s.exec(select(type(t["ana"])).where(type(t["ana"]).username == n)).one() for n in ("bob", "cid"))
        for voter in (t["ana"], bob):
            cast_vote(session=s, actor=voter, target_kind="alternative", target_id=t["alts"]["bad"],
                      question="justifiable", answer="yes")
    with session_scope(t["engine"]) as s:
        audit = audit_mcqs(session=s, actor=t["cur"], dataset_id=t["ds"].id)
    assert audit.flag_counts() == {"distractor_also_justifiable": 2, "key_voted_justifiable": 1}
    (neg,) = [x for x in audit.findings if x.flag == "key_voted_justifiable"]
    assert neg.mc_type == "select_neg" and neg.concept == "deaths"
    assert "'least justifiable' key was voted justifiable for 'deaths'" in neg.message


def test_same_concept_tolerates_blade_concept_drift():
    assert same_concept("education", "Education level") and same_concept("Age", "age.")
    assert not same_concept("age", "marriage length") and not same_concept("", "age")


@pytest.fixture
def imported(engine, store, shared_blade):
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets", store=store, max_bytes=200 * 2**20)
    return engine


def test_generation_on_every_shared_blade_dataset_follows_the_rule(imported):
    built = 0
    with session_scope(imported) as s:
        datasets = s.exec(select(Dataset)).all()
        for ds in datasets:
            items = {i.key: i for i in ground_truth(session=s, dataset_id=ds.id)}
            if not items:
                with pytest.raises(MCQGenerationError, match="no decisions or alternatives at all"):
                    generate_mcqs(session=s, actor=None, dataset_id=ds.id)
                continue
            report = generate_mcqs(session=s, actor=None, dataset_id=ds.id, settings=MCQSettings(seed=11))
            assert report.mcqs, ds.name
            for q in report.mcqs:
                built += 1
                assert 2 <= len(q["options"]) <= 4 and q["mc_type"] in ("select_pos", "select_neg")
                for o in q["options"]:
                    prov = o["extra"]["provenance"]
                    for ref in prov["items"]:  # provenance resolves to stored items and transform paths
                        item = items[f"{ref['target_kind']}:{ref['target_id']}"]
                        assert item.status == ref["status"]
                        model = {"variable": Variable, "transform": Transform, "alternative": Alternative}
                        assert s.get(model[ref["target_kind"]], ref["target_id"]) is not None
                        for step in ref["path"]:
                            assert s.get(Transform, step) is not None or s.get(Alternative, step) is not None
                    assert prov["status"] in ("justifiable", "unjustifiable")  # never contested or unjudged
                key = _key(q)
                status = key["extra"]["provenance"]["status"]
                concept = key["extra"]["provenance"]["concept"]
                if q["mc_type"] == "select_pos":
                    assert status == "justifiable"
                    if q["kind"] == "transform":
                        assert concept == normal_concept(q["concept"])
                elif key["negative_reason"] == "wrong_variable":
                    assert status == "justifiable" and concept != normal_concept(q["concept"])
                else:
                    assert status == "unjustifiable"
            audit = audit_mcqs(session=s, actor=None, dataset_id=ds.id)
            generated = {q["id"] for q in report.mcqs}
            assert not [x for x in audit.findings if x.mcq_id in generated]  # fresh MCQs agree with the votes
    assert built > 100


# BLADE's own MCQs in the shared data (9 datasets with MCQs; mortgage and teachingratings are not shared)
EXPECTED_AUDIT = {
    "affairs": (33, 33, 11), "amtl": (12, 9, 0), "boxes": (17, 17, 7), "caschools": (5, 5, 0),
    "crofoot": (11, 10, 0), "fish": (15, 15, 0), "hurricane": (5, 5, 0), "panda_nuts": (24, 21, 1),
    "reading": (20, 13, 0),
}


def test_audit_of_blades_own_mcqs(imported):
    figures, flags = {}, {}
    with session_scope(imported) as s:
        for ds in s.exec(select(Dataset)).all():
            audit = audit_mcqs(session=s, actor=None, dataset_id=ds.id)
            if audit.total:
                figures[ds.name] = (audit.total, audit.checked, audit.flagged)
                for name, n in audit.flag_counts().items():
                    flags[name] = flags.get(name, 0) + n
    assert figures == EXPECTED_AUDIT
    assert sum(t for t, _, _ in figures.values()) == 142
    assert flags == {"distractor_also_justifiable": 1, "distractor_also_unjustifiable": 16, "key_contested": 2,
                     "key_not_justifiable": 3, "key_voted_justifiable": 3}


def test_cli_mcq_generate_and_audit(tmp_path, shared_blade):
    from tests.cli_runner import forkpaths

    def cli(*args, process=False):
        return forkpaths(tmp_path, *args, process=process)

    assert cli("import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    r = cli("mcq", "audit", "hurricane", "--json", process=True)  # the real command, once
    assert r.returncode == 0, r.stderr
    audit = json.loads(r.stdout)
    assert (audit["total"], audit["checked"], audit["flagged"]) == (5, 5, 0)
    r = cli("mcq", "generate", "hurricane", "--seed", "5")
    assert r.returncode == 0, r.stderr
    assert "MCQs from rule blade@1, seed 5" in r.stdout and "transform/select_pos" in r.stdout
    r = cli("mcq", "audit", "hurricane")
    assert r.returncode == 0 and "0 flagged" in r.stdout
    r = cli("release", "create", "--version", "1.0.0")  # nobody reviewed the generated ones: left out, and said
    assert r.returncode == 0 and "Generated MCQs not yet reviewed were left out of this release" in r.stdout
    r = cli("mcq", "generate", "nowhere")
    assert r.returncode == 2 and "no dataset called 'nowhere'" in r.stderr and "Traceback" not in r.stderr


def test_curators_review_accept_reject_and_edit(judged):
    from curation.services.mcq_review import MCQEditError, edit_mcq, mcq_views, review_mcq

    t = judged
    report = _generate(t, seed=2)
    neg = next(q for q in report.mcqs if q["kind"] == "transform" and q["mc_type"] == "select_neg")
    pos = next(q for q in report.mcqs if q["kind"] == "variable" and q["mc_type"] == "select_pos")
    with session_scope(t["engine"]) as s:
        with pytest.raises(PermissionDenied):
            review_mcq(session=s, actor=t["ana"], mcq_id=neg["id"], decision="accepted")
        review_mcq(session=s, actor=t["cur"], mcq_id=neg["id"], decision="accepted", note="clear")
        with pytest.raises(MCQEditError, match="Say why"):
            review_mcq(session=s, actor=t["cur"], mcq_id=pos["id"], decision="rejected")
    texts = [o["text"] for o in neg["options"]]
    with session_scope(t["engine"]) as s:  # bad edits: nothing stored
        with pytest.raises(MCQEditError, match="key is not among the options"):
            edit_mcq(session=s, actor=t["cur"], mcq_id=neg["id"], options=texts[:2], key="df['x'] = 1")
        with pytest.raises(MCQEditError, match="2 to 4"):
            edit_mcq(session=s, actor=t["cur"], mcq_id=neg["id"], options=[BAD], key=BAD)
        with pytest.raises(MCQEditError, match="same text"):
            edit_mcq(session=s, actor=t["cur"], mcq_id=neg["id"], options=[BAD, BAD + "  "], key=BAD)
    with session_scope(t["engine"]) as s:
        stored = mcq_by_id(session=s, mcq_id=neg["id"])
        assert [o["text"] for o in stored.options] == texts
    new = "df['deaths_cube'] = df['deaths'] ** 3"
    with session_scope(t["engine"]) as s:
        edit_mcq(session=s, actor=t["cur"], mcq_id=neg["id"], options=[BAD, new], key=new, note="harder negative")
    with session_scope(t["engine"]) as s:
        stored = mcq_by_id(session=s, mcq_id=neg["id"])
        assert [o["text"] for o in stored.options] == [BAD, new] and stored.correct_index == 1
        assert stored.options[0]["extra"]["provenance"]["items"][0]["target_id"] == t["alts"]["bad"]  # kept
        assert stored.options[0]["extra"]["provenance"]["role"] == "distractor"
        assert stored.options[1]["extra"]["provenance"]["why"].startswith("written by curator")
        row = stored.review
        assert row.status == "edited" and [h["to"] for h in row.history] == ["accepted", "edited"]
        assert row.history[1]["before"]["options"] == texts
        views = {v.id: v for v in mcq_views(session=s, actor=t["cur"], dataset_id=t["ds"].id)}
        assert views[neg["id"]].review == "edited" and views[pos["id"]].review == "pending"
        # the curator's own key matches no judged item: the audit counts it as unchecked, it does not guess
        assert views[neg["id"]].findings == []
        assert audit_mcqs(session=s, actor=t["cur"], dataset_id=t["ds"].id).unlinked_keys == 1
        review_mcq(session=s, actor=t["cur"], mcq_id=pos["id"], decision="rejected", note="too easy")
    again = _generate(t, seed=2)  # reviewed MCQs survive regeneration
    assert again.kept == 2
    with session_scope(t["engine"]) as s:
        assert mcq_by_id(session=s, mcq_id=neg["id"]).options[1]["text"] == new


def test_release_carries_statuses_and_reviewed_mcqs_and_blade_gets_its_exact_shape(judged):
    from curation.services.mcq_review import review_mcq
    from curation.services.mcq_store import unreviewed_mcqs
    from curation.services.release_data import dataset_release
    from curation.services.releases import unreviewed_note
    from exports.blade_convert import blade_mcqs_from_release
    from exports.blade_mcq import parse_mcqs

    t = judged
    report = _generate(t, seed=4)
    rejected = report.mcqs[0]["id"]
    pending = report.mcqs[-1]["id"]
    with session_scope(t["engine"]) as s:
        review_mcq(session=s, actor=t["cur"], mcq_id=rejected, decision="rejected", note="duplicate idea")
        for q in report.mcqs[1:-1]:
            review_mcq(session=s, actor=t["cur"], mcq_id=q["id"], decision="accepted")
    with session_scope(t["engine"]) as s:  # accepted, then put back to pending: unreviewed again
        review_mcq(session=s, actor=t["cur"], mcq_id=pending, decision="accepted")
        review_mcq(session=s, actor=t["cur"], mcq_id=pending, decision="pending")
    with session_scope(t["engine"]) as s:
        ds = dataset_release(session=s, dataset=s.get(Dataset, t["ds"].id))
        assert unreviewed_mcqs(session=s, dataset_id=t["ds"].id) == 1
    # rejected ones are never released, and generated ones nobody reviewed yet are not either
    assert [q.id for q in MCQPart.of(ds).items] == [q["id"] for q in report.mcqs[1:-1]] and pending not in {q.id for q in MCQPart.of(ds).items}
    assert unreviewed_note({"storms": {"mcqs_unreviewed": 1}}).startswith(
        "Generated MCQs not yet reviewed were left out of this release (1 of storms)")
    assert MCQPart.of(ds).items[0].extra["review"]["status"] == "accepted" and MCQPart.of(ds).items[0].extra["review"]["by"].startswith("A")
    assert all(o.extra["provenance"]["items"] for q in MCQPart.of(ds).items for o in q.options)
    status = {c.target_id: c for c in ds.consensus}
    assert status[t["alts"]["mixed"]].status == "contested" and status[t["alts"]["mixed"]].basis == "rule"
    assert status[t["alts"]["mixed"]].tally == {"justifiable": 1, "unjustifiable": 1, "unsure": 1}
    assert status[t["alts"]["bad"]].status == "unjustifiable" and status[t["alts"]["bad"]].rule == "blade@1"
    assert status[t["ids"]["bob"]["iv"]].status == "unjudged"
    blade = blade_mcqs_from_release(ds)
    assert list(blade) == ["mcqs_cvar", "mcqs_transform"]
    for q in blade["mcqs_cvar"]:
        assert list(q) == ["mc_type", "options", "correct_answer"]
        assert all(list(o) == ["cvar_str", "rationale", "is_llm_generated"] for o in q["options"])
        assert q["correct_answer"] in q["options"]
    for concept, items in blade["mcqs_transform"].items():
        for q in items:
            assert list(q) == ["coneptual_var_str", "mc_type", "options", "correct_answer"]
            assert q["coneptual_var_str"] == concept == "deaths"
            assert all(list(o) == ["code", "rationale", "is_llm_generated"] for o in q["options"])
    parsed = parse_mcqs(json.dumps(blade))  # BLADE's own strict reader accepts it
    assert len(list(parsed.all_mcqs())) == len(MCQPart.of(ds).items)


@pytest.fixture
def fish(engine, store, shared_blade):
    """BLADE's fish dataset imported alone (its 15 MCQs come without recorded provenance), and a curator."""
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "fish", store=store,
                     max_bytes=200 * 2**20)
    cur = f.user(engine, "cur", Role.CURATOR)
    with session_scope(engine) as s:
        ds = s.exec(select(Dataset).where(Dataset.name == "fish")).one()
    return {"engine": engine, "cur": cur, "ds": ds}


def test_editing_one_option_keeps_every_other_options_provenance_as_it_was(fish):
    from curation.services.mcq_review import edit_mcq

    with session_scope(fish["engine"]) as s:
        first = dataset_mcqs(session=s, dataset_id=fish["ds"].id)[0]
    before = [dict(o) for o in first.options]
    texts = [o["text"] for o in before]
    key = texts[first.correct_index]
    changed = 0 if first.correct_index != 0 else 1
    texts[changed] = texts[changed] + " # reworded by the curator"
    with session_scope(fish["engine"]) as s:
        edit_mcq(session=s, actor=fish["cur"], mcq_id=first.id, options=texts, key=key)
    with session_scope(fish["engine"]) as s:
        after = mcq_by_id(session=s, mcq_id=first.id).options
    for i, option in enumerate(after):
        if i == changed:
            assert option["extra"]["provenance"]["why"].startswith("written by curator")
        else:  # unchanged: exactly as imported, no provenance made up without its "why"
            assert option == before[i]


def test_generating_again_keeps_pending_imported_mcqs_and_replaces_only_pending_generated_ones(fish):
    with session_scope(fish["engine"]) as s:
        imported_ids = {q.id for q in dataset_mcqs(session=s, dataset_id=fish["ds"].id)}
    assert imported_ids

    def generate():
        with session_scope(fish["engine"]) as s:
            return generate_mcqs(session=s, actor=fish["cur"], dataset_id=fish["ds"].id, settings=MCQSettings(seed=0))

    first = generate()
    assert first.created > 0 and first.removed == 0
    again = generate()
    assert again.removed == first.created and again.created == first.created  # its own pending ones, replaced
    with session_scope(fish["engine"]) as s:
        now = dataset_mcqs(session=s, dataset_id=fish["ds"].id)
    assert imported_ids <= {q.id for q in now}  # experts' MCQs never dropped
    assert len(now) == len(imported_ids) + first.created
