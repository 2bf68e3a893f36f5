"""The repository's scripts (Python files without a suffix, in scripts/) as modules."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from types import ModuleType

from helpers.bundled import REPO


def load_script(name: str) -> ModuleType:
    """scripts/<name>, imported as the module <name> (run as a module, not as __main__)."""
    loader = importlib.machinery.SourceFileLoader(name, str(REPO / "scripts" / name))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (a dataclass looks its module up there)
    loader.exec_module(module)
    return module
