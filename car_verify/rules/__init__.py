"""What a plan must keep to: policies (:mod:`.policy`), trace rules (:mod:`.trace`,
over the grammar in ``car_verify.grammars``) and the tool registry (:mod:`.tools`),
with the analyses of the rules themselves: policy diff and lint
(:mod:`.policy_analysis`), trace-rule containment (:mod:`.trace_automata`), rate
limits on runs of calls (:mod:`.rate_compare`), RE2 patterns as z3 regexes
(:mod:`.policy_regex`) and the commands a shell command line runs
(:mod:`.shell_words`)."""
