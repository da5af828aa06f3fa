"""drocli: a command-line runner that reproduces stochastic-optimization papers from YAML specs.

The package is laid out by the pipeline's stages (docs/architecture.md): spec/, plugins/,
run/, results/, claims/, figures/, report/, cli/, next to the plug-in folders data/,
problems/, solvers/ and ops/. The import paths docs/plugins.md gives plug-in authors stay
as they were: `drocli.registry` and `drocli.monitor` name the modules that now live in
plugins/ and run/. They are imported when first named, so `import drocli` stays light.
"""

import importlib
import importlib.util
import sys

__version__ = "0.1.0"

# a path plug-in authors write -> the module it names
ALIASES = {"drocli.registry": "drocli.plugins.registry",
           "drocli.monitor": "drocli.run.monitor"}


class _Alias:
    """A finder and loader (the protocols need only these methods; importlib.abc would add
    to every start-up) that finds an alias path and hands on the module it names: one
    module object, two names."""

    def find_spec(self, name, path=None, target=None):
        if name in ALIASES:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(ALIASES[spec.name])

    def exec_module(self, module):
        """Nothing to run: the named module ran when it was imported."""


if not any(isinstance(f, _Alias) for f in sys.meta_path):
    sys.meta_path.insert(0, _Alias())
