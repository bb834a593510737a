"""A model's predictions of what actions do, with the runtime's answers.

``simulate_with_predictions`` (the runtime's predictive simulation): every action,
in CAR's order (level by level, proposal order inside a level), applies its
effects: a ``state_write``'s own ``{key: value}`` (the write itself), then the
predicted ``effects`` when the prediction's ``accuracy`` is at least
``min_accuracy``, else its ``expected_effects``. Nothing is
checked on the way (no precondition, no dependency blocks): it answers "what
would the state be if each action did what the model says", not whether the
plan can run. ``predictions`` maps an action id to ``{effects, accuracy}``; an id
that names no action is ignored, one that names several applies to each.

``transaction_check_with_predictions``: the runtime's ``transaction_check`` (the
car profile), each action's write set unioned with the keys the model predicts
it writes (``predictions`` maps an action id to an array of keys).

Both read their predictions strictly: an unknown field, or a missing
``effects`` or ``accuracy``, is an input error naming its place.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from ..base.errors import InputError, reject_unknown_fields

__all__ = ["simulate_with_predictions", "transaction_check_with_predictions"]


def _effect_predictions(predictions: Any) -> dict[str, tuple[dict[str, Any], float]]:
    from ..ir.model import json_value

    doc = json_value(predictions)
    if not isinstance(doc, Mapping):
        raise InputError("expected an object: action id -> {effects, accuracy}", ["predictions"])
    out = {}
    for action_id, item in doc.items():
        where: list[str | int] = ["predictions", action_id]
        if not isinstance(item, Mapping):
            raise InputError("expected an object {effects, accuracy}", where)
        reject_unknown_fields(item, ("effects", "accuracy"), where)
        for name in ("effects", "accuracy"):
            if name not in item:
                raise InputError(f"missing field {name!r}", where)
        effects, accuracy = item["effects"], item["accuracy"]
        if not isinstance(effects, Mapping):
            raise InputError("expected an object of key -> value", [*where, "effects"])
        if isinstance(accuracy, bool) or not isinstance(accuracy, (int, float)):
            raise InputError("expected a number", [*where, "accuracy"])
        out[str(action_id)] = (dict(effects), float(accuracy))
    return out


def simulate_with_predictions(
    proposal: Any,
    predictions: Any,
    min_accuracy: float,
    initial_state: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The end state when each action does what the model predicts, where the
    prediction is accurate enough (see the module docs)."""
    from ..ir.model import load
    from ..semantics.car import CAR, car_written

    model = load(proposal)
    CAR.refuse(model)
    if isinstance(min_accuracy, bool) or not isinstance(min_accuracy, (int, float)):
        raise InputError("min_accuracy: expected a number", [])
    if isinstance(min_accuracy, float) and math.isnan(min_accuracy):
        raise InputError("min_accuracy: expected a number, got NaN", [])
    predicted = _effect_predictions(predictions)
    state: dict[str, Any] = copy.deepcopy(dict(initial_state or {}))
    order = [i for level in CAR.order(model).levels for i in level]  # CAR's levels, in turn
    for action in (model.actions[i] for i in order):
        chosen = predicted.get(action.id)
        if chosen is not None and chosen[1] >= min_accuracy:
            # The prediction stands for the declared effects; a state_write's own
            # {key: value} is the operation itself and is applied first all the same.
            state.update(copy.deepcopy(car_written(action)))
            state.update(copy.deepcopy(chosen[0]))
        else:
            state.update(copy.deepcopy(dict(CAR.effects(action))))
    return state


def transaction_check_with_predictions(
    proposal: Any,
    predictions: Any,
    versions: Mapping[str, Any] | None = None,
    state: Mapping[str, Any] | None = None,
) -> Any:
    """``transaction_check`` under the car profile, each action's write set with
    the keys the model predicts it writes (see the module docs)."""
    from ..ir.model import json_value, load
    from .transactions import transaction_check

    model = load(proposal)
    doc = json_value(predictions)
    if not isinstance(doc, Mapping):
        raise InputError("expected an object: action id -> [keys]", ["predictions"])
    for action_id, keys in doc.items():
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise InputError("expected an array of keys", ["predictions", action_id])
    # load models a dict or text afresh; a model the caller passed is copied once
    widened = copy.deepcopy(model) if model is proposal else model
    for action in widened.actions:
        keys = doc.get(action.id)
        if keys:
            action.write_set = list(dict.fromkeys([*action.write_set, *keys]))
    return transaction_check(widened, versions=versions, state=state, profile="car")
