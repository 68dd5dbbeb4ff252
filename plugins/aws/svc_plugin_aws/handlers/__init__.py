"""The native resource types: one module each, a ``Handler`` subclass per CloudFormation type.

``svc_plugin_aws.routing`` declares which types these modules serve; every other type goes through Cloud
Control. Adding a native type is adding a module here (and its Pkl schema module) and its line in the table.
"""
