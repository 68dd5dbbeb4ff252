"""How Pkl's error messages are shown to users."""

from svc.pkl import PklError

RAW = """–– Pkl Error ––
Type constraint `isBetween(0, 65535)` violated.
Value: 70000

4 | server { port = 70000 }
                    ^^^^^
at agent#agent.server.port (file:///tmp/agent.pkl)

128 | renderer.renderDocument(value)
      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
at pkl.base#Module.output.text (https://github.com/apple/pkl/blob/0.30.2/stdlib/base.pkl#L128)
"""


def test_banner_and_output_rendering_frames_are_dropped() -> None:
    error = PklError(RAW)
    assert str(error) == (
        "Type constraint `isBetween(0, 65535)` violated.\nValue: 70000\n\n"
        "4 | server { port = 70000 }\n                    ^^^^^\nat agent#agent.server.port (file:///tmp/agent.pkl)"
    )
    assert error.headline == "Type constraint `isBetween(0, 65535)` violated."
