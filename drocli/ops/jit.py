"""Deferred numba: `@njit(...)` that imports numba only when a kernel is first used.

Loading a spec imports the solver and problem modules it names; their compiled kernels should
cost nothing until a cell runs. `njit(**options)` returns a `LazyKernel`. On first use (a
call, or an attribute such as `.py_func`) numba is imported and the kernel becomes a real
dispatcher. At that moment every LazyKernel in the defining module's globals, and in the
drocli modules those globals name, is replaced by its dispatcher (transitively), because numba
resolves a kernel's callees through its module globals when it compiles. The compiled code is
exactly what `numba.njit(**options)(func)` gives.

A kernel declared `cache=True` needs a writable folder for its cache. When neither the
install's `__pycache__` nor the user's cache folder (under HOME) is writable (a read-only
install run by a user without a home), numba refuses with "no locator available"; the kernel
then caches in a private folder under the system's temporary folder, and compiles uncached if
there is none.
"""

from __future__ import annotations

import types

from drocli.run.scratch import private_dir

_REALIZED: set[int] = set()


class LazyKernel:
    """A kernel whose numba dispatcher is created on first use."""

    def __init__(self, func, options: dict):
        self._func = func
        self._options = options
        self._disp = None
        self.__wrapped__ = func
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__doc__ = func.__doc__
        self.__module__ = func.__module__

    @property
    def dispatcher(self):
        if self._disp is None:
            self._disp = _dispatcher(self._func, self._options)
            _realize(self._func.__globals__)
        return self._disp

    def __call__(self, *args, **kwargs):
        return self.dispatcher(*args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __repr__(self) -> str:
        state = "compiled on first use" if self._disp is None else "loaded"
        return f"<LazyKernel {self.__module__}.{self.__qualname__} ({state})>"


class LazyIntrinsic(LazyKernel):
    """A numba intrinsic built on first use by `factory()` (which imports numba), so that a
    module holding one imports numba no earlier than its kernels do."""

    def __init__(self, factory):
        super().__init__(factory, {})

    @property
    def dispatcher(self):
        if self._disp is None:
            self._disp = self._func()
        return self._disp


def _dispatcher(func, options: dict):
    """numba.njit(**options)(func), with a private cache folder when numba finds no
    writable one (see the module's docstring)."""
    import numba

    try:
        return numba.njit(**options)(func)
    except RuntimeError as exc:
        if not options.get("cache") or "no locator available" not in str(exc):
            raise
    from numba.core import config

    folder = private_dir("numba")
    if folder is not None:
        config.CACHE_DIR = folder
        try:
            return numba.njit(**options)(func)
        except RuntimeError:
            pass
    return numba.njit(**{**options, "cache": False})(func)


def _realize(namespace: dict) -> None:
    """Replace every LazyKernel in a module namespace (and in the drocli modules it names)
    by its dispatcher."""
    if id(namespace) in _REALIZED:
        return
    _REALIZED.add(id(namespace))
    for key, value in list(namespace.items()):
        if isinstance(value, LazyKernel):
            namespace[key] = value.dispatcher
        elif isinstance(value, types.ModuleType) and value.__name__.startswith("drocli."):
            _realize(value.__dict__)


def njit(*args, **options):
    """`numba.njit` with the import of numba deferred to the kernel's first use."""
    if args and callable(args[0]) and len(args) == 1 and not options:
        return LazyKernel(args[0], {})
    if args:
        raise TypeError("drocli.ops.jit.njit takes keyword options only")

    def deco(func):
        return LazyKernel(func, options)

    return deco
