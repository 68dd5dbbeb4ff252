"""Test support code (stand-ins for external services). Not shipped with the package."""
