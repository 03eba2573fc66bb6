"""Why a certificate or key file cannot be used, naming the file."""

from __future__ import annotations

from pathlib import Path


class CertificateFileError(Exception):
    """A certificate or key file is missing, unreadable, not PEM, or unusable.

    `path` names the file to look at; the message starts with it so that the CLI
    can print it as is (exit code 2) and an operator knows what to fix.
    """

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


class KeyMismatchError(CertificateFileError):
    """A private key that does not belong to the certificate it is paired with."""

    def __init__(self, key_path: Path | str, cert_path: Path | str) -> None:
        super().__init__(key_path, f"private key does not match the certificate in {cert_path}")
        self.cert_path = Path(cert_path)
