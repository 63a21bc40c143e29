"""torchair.configs.compiler_config.CompilerConfig on superkernel.

torchair's config is a tree of sections (config.debug.graph_dump.type,
config.experimental_config.frozen_parameter, config.ge_config..., config.mode).
Here every section accepts any attribute, so scripts that set them run
unchanged. What means something on the CPU:

    experimental_config.frozen_parameter   True: what the backend does anyway
                                           (parameters become constants)
    mode                                   accepted ("max-autotune",
                                           "reduce-overhead"): one way here
    superkernel                            a superkernel.CompilerConfig:
                                           executor, num_threads, options
                                           (default super-kernel options),
                                           profiling_dir, watchdog_ms
                                           (checked when made, and by
                                           get_npu_backend)

Any other setting has no effect; get_npu_backend names them in one warning.
"""

import warnings

from superkernel.config import CompilerConfig as _SkConfig

# Settings taken without a warning: {dotted path: accepted values (None: any)}.
_MEANINGFUL = {
    "mode": None,
    "experimental_config.frozen_parameter": (True,),
}


class _Section:
    """A config section: attributes set on it are recorded; reading an
    unset one gives a subsection (so a.b.c = v works at any depth)."""

    def __init__(self, path):
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_values", {})

    def __getattr__(self, key):
        if key.startswith("__"):
            raise AttributeError(key)
        values = object.__getattribute__(self, "_values")
        if key not in values:
            path = object.__getattribute__(self, "_path")
            values[key] = _Section(f"{path}.{key}" if path else key)
        return values[key]

    def __setattr__(self, key, value):
        self._values[key] = value

    def _settings(self):
        """(dotted path, value) of every attribute set, at any depth."""
        for key, value in self._values.items():
            if isinstance(value, _Section):
                yield from value._settings()
            else:
                yield (f"{self._path}.{key}" if self._path else key), value

    def __repr__(self):
        return f"<torchair config section {self._path or 'CompilerConfig'}: {dict(self._settings())}>"


class CompilerConfig(_Section):
    """torchair's CompilerConfig; see the module docstring."""

    def __init__(self):
        super().__init__("")
        self._values["superkernel"] = _SkConfig()

    def __setattr__(self, key, value):
        # checked when set: get_npu_backend would otherwise fail on it far
        # from the line that set it
        if key == "superkernel" and not isinstance(value, _SkConfig):
            raise TypeError(
                f"CompilerConfig.superkernel: expected a superkernel.CompilerConfig, got {type(value).__name__}"
            )
        super().__setattr__(key, value)

    def _settings(self):
        for path, value in super()._settings():
            if path != "superkernel":
                yield path, value

    def ignored_settings(self):
        """The settings that have no effect here."""
        out = []
        for path, value in self._settings():
            accepted = _MEANINGFUL.get(path, ())
            if path in _MEANINGFUL and (accepted is None or value in accepted):
                continue
            out.append(f"{path}={value!r}")
        return out

    def to_superkernel(self, stacklevel=2):
        """The superkernel.CompilerConfig to use, after warning once about
        the settings without effect."""
        sk = self._values["superkernel"]
        if not isinstance(sk, _SkConfig):
            raise TypeError(f"CompilerConfig.superkernel must be a superkernel.CompilerConfig, got {type(sk).__name__}")
        ignored = self.ignored_settings()
        if ignored:
            warnings.warn(
                "superkernel.compat.torchair: CompilerConfig settings without effect on the CPU: " + ", ".join(ignored),
                stacklevel=stacklevel,
            )
        return sk
