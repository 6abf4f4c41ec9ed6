"""A throwaway PKI made at test time: a CA, the broker's certificate, client certificates."""

from __future__ import annotations

import datetime as dt
import ipaddress
import shutil
import subprocess
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


class Pki:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        self.ca = (x509.CertificateBuilder().subject_name(_name("tabled test CA"))
                   .issuer_name(_name("tabled test CA")).public_key(self.ca_key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5))
                   .not_valid_after(now + dt.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(x509.KeyUsage(False, False, False, False, False, True, True,
                                                False, False), critical=True)
                   .sign(self.ca_key, hashes.SHA256()))
        self.ca_file = directory / "ca.pem"
        self.ca_file.write_bytes(self.ca.public_bytes(serialization.Encoding.PEM))

    def issue(self, cn: str, *, server: bool = False) -> tuple[Path, Path]:
        """(certificate, key) files for ``cn``; a server certificate names 127.0.0.1."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        b = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(self.ca.subject)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - dt.timedelta(minutes=5))
             .not_valid_after(now + dt.timedelta(days=1))
             .add_extension(x509.ExtendedKeyUsage(
                 [ExtendedKeyUsageOID.SERVER_AUTH if server else
                  ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if server:
            b = b.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
        cert = b.sign(self.ca_key, hashes.SHA256())
        cert_file, key_file = self.dir / f"{cn}.pem", self.dir / f"{cn}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                               serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        return cert_file, key_file


def broker_access_files(files: Path, users: dict[str, str]) -> tuple[Path, Path]:
    """A Mosquitto password file for ``users`` and the shipped ACL example, in ``files``,
    readable by the mosquitto user (it drops root before reading them): (passwd, acl)."""
    passwd, acl = files / "passwd", files / "acl"
    for i, (user, password) in enumerate(users.items()):
        subprocess.run(["mosquitto_passwd", *(["-c"] if i == 0 else []), "-b", str(passwd),
                        user, password], check=True, capture_output=True)
    shutil.copy(Path(__file__).resolve().parents[1] / "systemd" / "mosquitto" / "acl.example",
                acl)
    for f in files.iterdir():
        f.chmod(0o644)
    return passwd, acl
