"""The bottom layer: what every other layer uses and which uses nothing of theirs.

JSON value semantics (:mod:`.values`), errors (:mod:`.errors`), findings and where
they are (:mod:`.findings`, :mod:`.locate`), the one code table (:mod:`.codes`),
the configuration file (:mod:`.config`), the executor's event records
(:mod:`.events`), the names of the schedules a check explores (:mod:`.schedules`),
the HTML view registry (:mod:`.display`), progress bars (:mod:`.progress`) and
the accepted-field check of the registry files (:mod:`._accept`).
"""
