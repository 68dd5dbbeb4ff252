"""The generator of the AWS plugin's Pkl schema package from the CloudFormation registry.

It turns the registry schemas pinned in the ``cfn-lint`` distribution (a development dependency) into one
Pkl module per resource type under ``svc_plugin_aws/schema/<service>/<resource>.pkl``, the list of
discoverable types the manifest's filters use, and ``docs/aws-types.md``. It lives beside the plugin but
is not part of its wheel: the plugin never needs ``cfn-lint`` at run time.

Regenerate with ``.venv/bin/python -m svc_plugin_aws_gen generate``; ``check`` says whether the
committed files are what the generator makes. The same input always gives byte-identical output.
"""
