"""The ``svc`` command line interface."""
