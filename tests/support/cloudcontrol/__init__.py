"""A stand-in for the AWS Cloud Control API, for tests only (moto has no Cloud Control).

It speaks the real protocol on a loopback port, so boto3's own ``cloudcontrol`` client talks to it unchanged
(AWS JSON 1.0, ``X-Amz-Target: CloudApiService.<Operation>``; the operations, shapes and exception names of
botocore's ``cloudcontrol/2021-09-30`` model), and behaves as the pinned CloudFormation registry schemas (the
``cfn-lint`` dev dependency) say: desired states are validated against the type's schema (required
properties, types, enums, patterns Python can compile), read-only properties get plausible values (ARNs, ids,
the primary identifier when the service names the resource), create-only and read-only properties cannot be
patched, write-only ones are never read back, a duplicate identifier fails ``AlreadyExists``, a ClientToken makes
a request idempotent, and every change is asynchronous: a request token, IN_PROGRESS for a set number of status
polls or milliseconds, then SUCCESS or FAILED. A control API under ``/_standin/`` (no AWS client uses that path)
injects throttling, failures, error answers and delays, seeds resources behind the API's back, and shows state
and call counts.

Run it as a process, as the plugin under test runs in its own process::

    from support.cloudcontrol.client import start_cloudcontrol

    with start_cloudcontrol(tmp_path / "cloudcontrol.log") as standin:
        client = standin.client()                      # boto3 "cloudcontrol" on the stand-in
        env = standin.environment()                    # AWS_ENDPOINT_URL_CLOUDCONTROL for a plugin process
        standin.throttle(next_calls=2)                 # the control API

or as ``python -m support.cloudcontrol --port N`` with ``tests/`` on ``PYTHONPATH``. (This package imports
nothing itself, so that the server process does not load boto3 and pytest: import from its modules.) The ``cloudcontrol``
fixture (``tests/conftest.py``) gives one per test module, reset before each test.

``examples.example_for(schema)`` makes minimal valid properties for a type (and second values for an update and
for a replacement): what the all-types sweep creates.
"""
