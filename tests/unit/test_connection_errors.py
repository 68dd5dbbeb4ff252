"""The CLI's one-line descriptions of connection failures."""

import ssl

from svc.cli import http
from svc.cli.client import describe_connect_error

URL = "https://svc.example.com:443"


def caused_by(cause: BaseException, text: str = "connect failed") -> http.ConnectError:
    try:
        try:
            raise cause
        except BaseException as inner:
            raise http.ConnectError(text) from inner
    except http.ConnectError as outer:
        return outer


def test_refused() -> None:
    message = describe_connect_error(caused_by(ConnectionRefusedError(111, "Connection refused")), URL)
    assert message.startswith(f"the agent at {URL} is not running (connection refused)")


def test_unreachable_names_the_cause() -> None:
    message = describe_connect_error(caused_by(OSError("[Errno -2] Name or service not known"), "dns"), URL)
    assert message.startswith(f"cannot reach the agent at {URL}")
    assert "Name or service not known" in message and "SVC_API_URL" in message and "cli.api" in message


def test_certificate_verification() -> None:
    error = ssl.SSLCertVerificationError(1, "certificate verify failed")
    error.verify_message = "unable to get local issuer certificate"
    message = describe_connect_error(caused_by(error), URL)
    assert message.startswith(f"TLS verification of the agent at {URL} failed: unable to get local issuer certificate")
    assert "SSL_CERT_FILE" in message


def test_other_tls_failures() -> None:
    message = describe_connect_error(caused_by(ssl.SSLError(1, "wrong version number")), URL)
    assert message.startswith(f"TLS handshake with the agent at {URL} failed")
