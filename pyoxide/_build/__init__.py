"""The build: running ``cargo oxide`` (cargo.py), the content-addressed build cache behind
``pyoxide.load(crate)`` (cache.py), where the package's generated parts live (layout.py),
``pyoxide new``'s scaffolds (scaffold.py, templates/) and the ``.pyi`` stubs written from
a manifest (stubs.py)."""
