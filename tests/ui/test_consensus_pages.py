"""The consensus and MCQ pages in AppTest, per role: a meeting from start to summary, the rule preview,
coverage, MCQ generation and review."""

from __future__ import annotations

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.models import MeetingOutcome, Stage, Vote
from curation.services.annotation import submit_analysis
from curation.services.datasets import assign_analysts
from curation.services.mcq_generate import MCQSettings, generate_mcqs
from curation.services.mcq_store import dataset_mcqs, mcq_by_id
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from tests import factories as f
from tests.ui.conftest import texts


@pytest.fixture
def closed(ui):
    """ana, bob and cid submitted; votes split on ana's DV and transform; stage 2 closed."""
    bob, cid = f.user(ui.engine, "bob"), f.user(ui.engine, "cid")
    with session_scope(ui.engine) as s:
        assign_analysts(session=s, actor=ui.admin, dataset_id=ui.dataset_id,
                        user_ids=[ui.analyst.id, bob.id, cid.id])
    ids = {}
    for u in (ui.analyst, bob, cid):
        ids[u.username] = f.full_analysis(ui.engine, u, ui.dataset_id)
        with session_scope(ui.engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ui.dataset_id)
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.REVIEW)
        a, b = ids["ana"], ids["bob"]
        for voter, kind, target, answer in [(bob, "variable", a["dv"], "yes"), (cid, "variable", a["dv"], "no"),
                                            (bob, "variable", a["iv"], "yes"), (cid, "variable", a["iv"], "yes"),
                                            (bob, "transform", a["transform"], "yes"),
                                            (cid, "transform", a["transform"], "yes"),
                                            (ui.analyst, "variable", b["dv"], "no"), (cid, "variable", b["dv"], "no")]:
            cast_vote(session=s, actor=voter, target_kind=kind, target_id=target, question="justifiable",
                      answer=answer, explanation="" if answer == "yes" else "raw counts are skewed")
    return {"bob": bob, "cid": cid, "ids": ids}


def _page(ui, user, page):
    at = ui.app(user).run()
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def _submit(at, label):
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception
    return at


def test_consensus_waits_for_stage_two_to_close(ui):
    at = _page(ui, ui.analyst, "consensus")
    assert "No dataset has closed stage 2 yet" in texts(at)


def test_no_meeting_is_offered_with_an_empty_agenda_or_an_empty_attendance(ui):
    """Issue 29 point 12: a meeting started with "0 items on the agenda", and on an imported dataset "Who is
    here?" had no options. Nothing contested: no meeting offered, and the page says why."""
    f.full_analysis(ui.engine, ui.analyst, ui.dataset_id)
    with session_scope(ui.engine) as s:
        submit_analysis(session=s, actor=ui.analyst, dataset_id=ui.dataset_id)
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.REVIEW)
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.CLOSED)
    at = _page(ui, ui.curator, "consensus")
    assert "Nothing to discuss: no item is contested" in texts(at)
    assert not [b for b in at.button if b.label == "Start the consensus meeting"]
    assert not [m for m in at.multiselect if m.label == "Who is here?"]


def test_a_meeting_in_the_browser_pages_from_start_to_summary(ui, closed):
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.CLOSED)
    at = _page(ui, ui.analyst, "consensus")
    assert "No meeting is open on this dataset" in texts(at)
    assert not [b for b in at.button if b.label == "Start the consensus meeting"]
    at = _page(ui, ui.curator, "consensus")
    assert "1 item contested or split under the rule will be on the agenda" in texts(at)  # said before it starts
    at.multiselect[0].select(ui.analyst.id).select(closed["bob"].id)
    at = _submit(at, "Start the consensus meeting")
    assert "Meeting 1 started with 1 item on the agenda" in texts(at)
    assert "1. variable · deaths" in at.selectbox(key="meeting.item").format_func(0)
    # the facilitator records the outcome with a reason and dissent
    at.radio[0].set_value("justifiable")
    at.text_area[0].input("log deaths is the usual outcome")
    at.text_input[0].input("cid prefers raw counts")
    at = _submit(at, "Record outcome")
    assert "Outcome recorded: justifiable." in texts(at)
    # an analyst sees the item and can revise a vote, but has no outcome form
    ana = _page(ui, closed["cid"], "consensus")
    assert not [b for b in ana.button if b.label == "Record outcome"]
    assert "Outcome: 🟢 justifiable — log deaths is the usual outcome" in texts(ana)
    ana.radio[0].set_value("yes")
    ana = _submit(ana, "Save my vote")
    assert "Your vote is saved" in texts(ana)
    with session_scope(ui.engine) as s:
        (vote,) = s.exec(select(Vote).where(Vote.annotator_id == closed["cid"].id,
                                            Vote.target_id == closed["ids"]["ana"]["dv"])).all()
        assert vote.answer == "yes"
        assert s.exec(select(MeetingOutcome)).one().dissent == "cid prefers raw counts"
    # projector view, then close: the summary appears
    at = _page(ui, ui.curator, "consensus")
    at.toggle(key="fp.meeting.projector").set_value(True).run()
    assert at.get("progress")[0].proto.text == "item 1 of 1"
    at = _submit(at, "Close the meeting")
    assert "Meeting 1 closed: 1 of 1 items decided." in texts(at)
    assert "Meeting summary" in texts(at)


def test_rule_preview_and_coverage_tabs_are_for_curators(ui, closed):
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.CLOSED)
    at = _page(ui, ui.analyst, "consensus")
    assert "Ground truth" not in texts(at)
    at = _page(ui, ui.curator, "consensus")
    at.session_state["consensus.tab"] = "Ground truth"
    at.run()
    at.radio(key=f"rule.{ui.dataset_id}").set_value("majority@1").run()
    assert "changes 0 item(s)" in texts(at)  # 1-1 stays contested under a simple majority
    at.radio(key=f"rule.{ui.dataset_id}").set_value("unanimous@1").run()
    assert "changes 0 item(s)" in texts(at)
    at.session_state["consensus.tab"] = "Coverage"
    at.run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 1


def test_mcq_page_generate_review_and_roles(ui, closed):
    at = ui.app(ui.analyst).run()
    with pytest.raises(ValueError, match="Could not find a navigation page"):  # not in an analyst's navigation
        at.switch_page("app_pages/mcqs.py")
    at = _page(ui, ui.curator, "mcqs")
    assert "Stage 2 of storms is still open" in texts(at)  # statuses may still change: the curator is told
    # what generating again does, exactly: imported MCQs are experts' and are never replaced
    assert "Generating again replaces only the generated MCQs no curator has reviewed yet" in texts(at)
    assert "imported ones (such as BLADE's, reviewed or not) are always kept" in texts(at)
    at = _submit(at, "Generate MCQs")
    assert "MCQs generated with seed 0" in texts(at)
    assert "**Audit** (rule `blade@1`): 2 MCQs, 2 checked" in texts(at) and "**0 flagged**" in texts(at)
    assert "select the conceptual variable that is" in texts(at)
    with session_scope(ui.engine) as s:
        first = dataset_mcqs(session=s, dataset_id=None)[0]
    at.button(key=f"mcq.accept.{first.id}").click().run()
    assert "MCQ 1 accepted." in texts(at)
    at.button(key=f"mcq.reject.{first.id}").click().run()
    assert "Say why this MCQ is rejected" in texts(at)  # shown, nothing changed
    with session_scope(ui.engine) as s:
        assert mcq_by_id(session=s, mcq_id=first.id).status == "accepted"


def test_mcq_generation_with_too_few_judged_items_says_what_is_missing(ui):
    at = _page(ui, ui.curator, "mcqs")
    at = _submit(at, "Generate MCQs")
    assert "No MCQ can be built for 'storms' yet" in texts(at)
    with session_scope(ui.engine) as s:
        assert dataset_mcqs(session=s, dataset_id=None) == []


def test_an_empty_mcq_list_says_why_filter_or_blinding(ui, closed):
    """A filter matching nothing, or stage-1 blinding, is said as such, not "generate them above" while MCQs exist;
    and a blind admin's warning shows once (a reviewer saw it twice, and the "generate" hint under it)."""
    with session_scope(ui.engine) as s:
        made = len(generate_mcqs(session=s, actor=ui.curator, dataset_id=ui.dataset_id,
                                 settings=MCQSettings(seed=0)).mcqs)
    assert made
    at = _page(ui, ui.curator, "mcqs")
    at.session_state["mcq.filter"] = "accepted"
    at.run()
    assert f"No MCQ matches the filter 'accepted' ({made} in all)." in texts(at)
    assert "generate them above" not in texts(at)
    with session_scope(ui.engine) as s:  # the admin is assigned too and has not submitted: blind to storms
        assign_analysts(session=s, actor=ui.admin, dataset_id=ui.dataset_id,
                        user_ids=[ui.analyst.id, closed["bob"].id, closed["cid"].id, ui.admin.id])
    at = _page(ui, ui.admin, "mcqs")
    shown = texts(at)
    assert shown.count("You are assigned to annotate 'storms' and have not submitted") == 1, shown
    assert "MCQs of storms are hidden from you until then" in shown and "generate them above" not in shown, shown


def test_two_facilitators_on_the_same_item_get_a_clear_message(ui, closed):
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.CLOSED)
    cur = _page(ui, ui.curator, "consensus")
    cur = _submit(cur, "Start the consensus meeting")
    adm = _page(ui, ui.admin, "consensus")  # both have the item open, no outcome yet
    cur.radio[0].set_value("justifiable")
    cur.text_area[0].input("agreed after discussion")
    cur = _submit(cur, "Record outcome")
    adm.radio[0].set_value("unjustifiable")
    adm.text_area[0].input("stale screen")
    adm = _submit(adm, "Record outcome")
    assert "cura recorded this item at" in texts(adm) and "Nothing of yours was saved" in texts(adm)
    assert "Someone else recorded this item since you opened it" in texts(adm)
    with session_scope(ui.engine) as s:
        row = s.exec(select(MeetingOutcome)).one()
        assert (row.outcome, row.reason, row.revision) == ("justifiable", "agreed after discussion", 1)
    adm = _submit(adm, "Reload this item")  # now the admin sees the record and may revise it knowingly
    adm.radio[0].set_value("unjustifiable")
    adm.text_area[0].input("on reflection, no")
    adm = _submit(adm, "Record outcome")
    assert "Outcome recorded: unjustifiable." in texts(adm)
    with session_scope(ui.engine) as s:
        assert s.exec(select(MeetingOutcome)).one().revision == 2


def test_the_meeting_shows_questions_opens_the_projector_on_the_picked_item_and_asks_before_closing(ui, closed):
    from curation.models import Meeting

    with session_scope(ui.engine) as s:  # a second split item: ana votes yes, cid no on bob's IV
        b = closed["ids"]["bob"]
        cast_vote(session=s, actor=ui.analyst, target_kind="variable", target_id=b["iv"], question="justifiable",
                  answer="yes", explanation="")
        cast_vote(session=s, actor=closed["cid"], target_kind="variable", target_id=b["iv"], question="justifiable",
                  answer="no", explanation="wind is not strength")
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.CLOSED)
    at = _page(ui, ui.curator, "consensus")
    at.multiselect[0].select(ui.analyst.id).select(closed["bob"].id)
    at = _submit(at, "Start the consensus meeting")
    agenda = at.selectbox(key="meeting.item")
    assert len(agenda.options) == 2
    # the vote table shows the question the analysts answered, not its id
    questions = set(at.dataframe[0].value["question"])
    assert questions == {"Overall: is this decision justifiable?"}, questions
    # the projector opens on the item picked in the agenda, not on item 1
    second = agenda.format_func(1)
    agenda.set_value(1).run()
    at.toggle(key="fp.meeting.projector").set_value(True).run()
    assert not at.exception, at.exception
    assert at.get("progress")[0].proto.text == "item 2 of 2"
    assert second.split("  ")[0] in [h.value for h in at.header]
    with session_scope(ui.engine) as s:
        assert s.exec(select(Meeting)).one().current == 1  # everyone's projector follows
    at.toggle(key="fp.meeting.projector").set_value(False).run()
    assert at.selectbox(key="meeting.item").value == 1  # and back in the list, the same item is picked
    # closing with items undecided asks first; "keep open" keeps it open
    at = _submit(at, "Close the meeting")
    assert "2 of 2 items have no outcome yet" in texts(at)
    with session_scope(ui.engine) as s:
        assert s.exec(select(Meeting)).one().status == "open"
    at = _submit(at, "Keep the meeting open")
    assert "have no outcome yet" not in texts(at)
    at = _submit(at, "Close the meeting")
    at = _submit(at, "Close with 2 undecided")
    assert "Meeting 1 closed: 0 of 2 items decided." in texts(at)
    with session_scope(ui.engine) as s:
        assert s.exec(select(Meeting)).one().status == "closed"
