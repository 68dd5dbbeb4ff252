"""Resource type descriptors from a plugin's Pkl schema package (``extract``); their model is ``svc.model.schema``."""
