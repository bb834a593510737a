"""The Agent IR and its reader: the dataclasses, ``load`` and ``to_dict``
(:mod:`.model`), the field decoders behind them (:mod:`._codec`) and the JSON
Schemas of the files, made from the model (:mod:`.schema`)."""
