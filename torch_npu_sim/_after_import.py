"""Runs a function once a module has finished importing (a post-import hook), or at once if it already has.

torch.compile's registrations (dynamo's device interface, Inductor's npu backend) need torch._dynamo and Inductor,
which take ~2.7 s to import: more than torch itself. Registering them when those modules are first imported, not
when torch_npu_sim is, keeps that cost off every process that never compiles (each rank of a distributed job,
each test subprocess)."""
import importlib.abc
import logging
import sys
import threading

log = logging.getLogger(__name__)

_lock = threading.Lock()
_pending: dict = {}  # module name -> [fn, ...] still to run once it has imported


class _Loader(importlib.abc.Loader):
    """The module's own loader, then its hooks."""

    def __init__(self, name, loader):
        self._name = name
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        with _lock:
            hooks = _pending.pop(self._name, [])
            if not _pending and _finder in sys.meta_path:
                sys.meta_path.remove(_finder)
        for fn in hooks:
            _run(fn, self._name)

    def __getattr__(self, attr):  # get_source, get_filename, ...: the wrapped loader's (tracebacks, inspect)
        return getattr(self._loader, attr)


class _Finder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: finds a hooked module with the finders after it, and wraps its loader."""

    def find_spec(self, fullname, path, target=None):
        with _lock:
            if fullname not in _pending:
                return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(fullname, spec.loader)
                return spec
        return None


_finder = _Finder()


def _run(fn, name):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (a registration that fails must not break the user's import)
        log.warning("torch_npu_sim: %s.%s after importing %s failed: %s: %s", fn.__module__, fn.__qualname__, name,
                    type(e).__name__, e)


def after_import(name: str, fn) -> None:
    """Calls fn() right after module `name` has executed, or now if it already has."""
    if name in sys.modules:
        _run(fn, name)
        return
    with _lock:
        _pending.setdefault(name, []).append(fn)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
