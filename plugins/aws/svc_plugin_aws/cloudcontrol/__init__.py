"""The generic handler: any type of the CloudFormation registry through the AWS Cloud Control API.

``handler`` makes the calls; ``events`` reads Cloud Control's progress events; ``patch`` fits the planner's
RFC 6902 patch to the model Cloud Control patches; ``tokens`` turns the agent's request token into a ClientToken.
"""
