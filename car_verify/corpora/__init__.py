"""Many files at once: a corpus of agent runs, in shards, to Parquet
(:mod:`.audit`, summarised by :mod:`.audit_report`) and a tree of plan files
(:mod:`.lint`, reading the files :mod:`.discover` selects)."""
