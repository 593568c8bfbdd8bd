"""forkpaths's inspect_ai extension: ``inspect eval forkpaths/<kind> -T release=<version|path>``.

inspect_ai finds it through the setuptools entry point ``[project.entry-points.inspect_ai] forkpaths`` (its
extension mechanism): loading :mod:`forkpaths._registry` registers one task per kind an agent can answer. The
tasks themselves are built by :mod:`evaluation.inspect_bridge`; this package is only the edge that reads the
settings and finds the release.
"""
