"""svc: an infrastructure-as-code agent driven by Pkl formas."""

from svc._version import __version__

__all__ = ["__version__"]
