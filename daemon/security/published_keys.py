"""Keys whose private half is public, so that anyone can sign with them: a table must
never trust one (``commands.principals``) nor sign with one (``signing.key_file``).

These are the fixed test keys this repository once derived from the seeds
``bytes(range(32))``, ``bytes(range(1, 33))`` and ``bytes(range(2, 34))`` in
``tests/keys.py`` (their history is public for good); the test keys are now made afresh
at every test run. Kept as data, by key id, so the daemon never imports the tests;
``tests/unit/test_published_keys.py`` checks that the list matches the seeds and that no
other private key is in the repository.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from daemon.security.signing import key_id, parse_public_key

# base64 of the raw public key -> where its private half was published
PUBLISHED = {
    "A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=": "tests/keys.py TABLE_KEY, bytes(range(32))",
    "ebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmQ=":
        "tests/keys.py SUPERVISOR_KEY, bytes(range(1, 33)); trusted by the example config "
        "until issue 12",
    "Q83AI9ItX54QfRoGk0V9NdHRDrfSHHIRkvVvXeQGZdM=":
        "tests/keys.py STRANGER_KEY, bytes(range(2, 34))",
}
_BY_KID = {key_id(parse_public_key(k)): where for k, where in PUBLISHED.items()}


def published(key: Ed25519PublicKey) -> str | None:
    """Where this key's private half was published, or None if it is not known to be."""
    return _BY_KID.get(key_id(key))
