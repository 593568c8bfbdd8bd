"""Issue 15 point 1 through the analyst's service: a check whose code forges its own result does not pass."""

from __future__ import annotations

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import DecisionValidationError
from curation.models import Transform
from curation.services import annotation as ann
from curation.services.checks import check_transform_code
from evaluation.sandbox import SandboxLimits, isolation
from evaluation.specs import ROOT_SPEC_ID
from tests import factories as f

pytestmark = pytest.mark.usefixtures("os_sandbox")

FORGE = """
import os, json
line = json.dumps({"event": "result", "ok": True, "code_seconds": 0.0, "data_seconds": 0.0, "violations": []})
for fd in range(3, 256):
    try:
        os.write(fd, ('\\n' + line + '\\n').encode())
    except OSError:
        pass
os._exit(0)
"""


@pytest.mark.parametrize("hook", [True, False], ids=["audit_hook_on", "audit_hook_off"])
def test_a_check_that_forges_its_result_fails_and_blocks_submission(engine, store, hook: bool) -> None:
    a = f.user(engine, "alice")
    ds = f.dataset(engine, store, assign=[a])
    f.full_analysis(engine, a, ds.id, checked=False)
    f.run_checks(engine, a, ds.id)
    isolation.set_audit_hook(hook)
    try:
        with session_scope(engine) as s:
            t = s.exec(select(Transform).where(Transform.spec_name == "log_deaths")).one()
            code = FORGE + "df['log_deaths'] = np.log1p(df['deaths'])\n"
            check = check_transform_code(session=s, actor=a, dataset_id=ds.id, code=code,
                                         dependencies=[ROOT_SPEC_ID], store=store,
                                         limits=SandboxLimits(timeout_s=60))
            assert not check.ok
            assert check.error_kind == "interfered"
            assert "interfered with the measurement" in (check.error or "")
            ann.save_transform(session=s, actor=a, dataset_id=ds.id, transform_id=t.id,
                               check=check.model_dump(mode="json"), data=ann.TransformInput(
                                   spec_name=t.spec_name, verb="derive", code=code, mapping=t.mapping,
                                   branches=t.branches))
    finally:
        isolation.set_audit_hook(True)
    with session_scope(engine) as s, pytest.raises(DecisionValidationError, match="its check failed"):
        ann.submit_analysis(session=s, actor=a, dataset_id=ds.id)
