"""Questions answered on top of ``verify`` and ``simulate`` (:mod:`car_verify.api`):
equivalence (:mod:`.equivalence`, z3 or sampled), the weakest precondition
(:mod:`.wp`), the removal of needless ordering (:mod:`.optimize`) and the edits that
mend a plan (:mod:`.fix`), several proposals together (:mod:`.transactions`,
:mod:`.predictions`), candidates ranked (:mod:`.ranking`) and workflows of
proposals (:mod:`.workflow`)."""
