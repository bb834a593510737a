"""What one plan does, read under the active semantics, without the pass machinery:
information flow (:mod:`.flow`), intent (:mod:`.intent`), permission tiers and the
approval ledger (:mod:`.permissions`), concurrency (:mod:`.concurrency`), claims
and receipts (:mod:`.claims`), the chance of reaching the goal (:mod:`.risk`) and
the schedule: critical path, makespan, levels (:mod:`.schedule_analysis`)."""
