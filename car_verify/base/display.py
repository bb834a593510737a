"""How car-verify's objects show themselves in Jupyter, without importing the views.

The results live low in the package (the model, the api, the executor) and their
HTML views live high (``car_verify.reporters.html`` draws the DAG through the exporter,
which imports the api). So the views register themselves here, from above, by the
qualified name of the class they draw, and a result's ``_repr_html_`` looks its
view up: this module never names a view's module. The package (``car_verify``,
the top layer, imported before any of its modules) hands it a loader that
imports the views; the first lookup calls it, so the views are in place whenever
one is asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["HtmlDisplay", "html_view", "register_html", "register_views_loader"]

_VIEWS: dict[str, Callable[[Any], str]] = {}
#: What imports the views, from above (set by the package).
_LOADERS: list[Callable[[], object]] = []


def register_views_loader(load: Callable[[], object]) -> None:
    """``load()`` registers views (importing the module that holds them); called on
    the first lookup that finds none."""
    _LOADERS.append(load)


def register_html(qualified_name: str, view: Callable[[Any], str]) -> None:
    """Draw instances of the class named ``module.QualName`` (and its subclasses) with ``view``."""
    _VIEWS[qualified_name] = view


def html_view(obj: object) -> Callable[[Any], str] | None:
    """The view registered for ``obj``'s class or its nearest base, if any."""
    while not _VIEWS and _LOADERS:
        _LOADERS.pop(0)()  # the views register themselves as their module loads
    for cls in type(obj).__mro__:
        view = _VIEWS.get(f"{cls.__module__}.{cls.__qualname__}")
        if view is not None:
            return view
    return None


class HtmlDisplay:
    """Mixin: ``_repr_html_`` through the registered view."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        view = html_view(self)
        if view is None:
            raise TypeError(f"no HTML view for {type(self).__name__}")
        return view(self)
