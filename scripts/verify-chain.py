#!/usr/bin/env python3
"""Checks os-audit's hash chain offline, with Python's standard library and openssl.

    os-audit events SESSION --bare | python3 scripts/verify-chain.py SESSION [--digest FILE [--public-key FILE.pub]]
    python3 scripts/verify-chain.py --all-from DIR --digest FILE [--public-key FILE.pub]

Recomputes a session's chain over the lines `os-audit events SESSION --bare` printed, and
prints its head hash. With --digest, also checks the digest's root over its heads, its
signature (with --public-key, through openssl) and that the session's hash at the digest's
last seq is the one the digest holds. --all-from DIR checks every session of the digest
against DIR/SESSION.jsonl. The definitions are in docs/integrity.md; this script shares no
code with os-audit, so that it checks os-audit rather than repeats it.

Exit code: 0 when everything matches, 1 when anything differs or cannot be read, 2 on a
usage error.
"""

import argparse
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile

DIGEST_FORMAT = "os-audit digest 1"


class Check:
    """Prints what it finds, as it finds it, and counts what does not match."""

    def __init__(self):
        self.problems = 0

    def info(self, line):
        print(line)

    def problem(self, line):
        self.problems += 1
        print(line)

    def finish(self, against_digest=False):
        """The last line, and the exit code."""
        if self.problems > 0:
            print(f"FAILED: {self.problems} {'problem' if self.problems == 1 else 'problems'} (above)")
            return 1
        if against_digest:
            print("ok: every session checked matches the digest")
        return 0


def quoted(session_id):
    """A session id as os-audit's messages show it: JSON, non-ASCII kept."""
    return json.dumps(session_id, ensure_ascii=False)


def chain_start(session_id):
    return hashlib.sha256(session_id.encode("utf-8")).digest()


def event_hash(previous, seq, stored_text):
    return hashlib.sha256(previous + seq.to_bytes(8, "big") + stored_text).digest()


def event_lines(stream):
    """Each line's bytes without its line ending. A stored text never ends in CR (JSON without
    white space between tokens), so a CRLF file reads the same."""
    for line in stream:
        if line.endswith(b"\n"):
            line = line[:-1]
        if line.endswith(b"\r"):
            line = line[:-1]
        yield line


def recompute(session_id, lines, verbose, check, covered_seq=None):
    """The session's chain: (events, head hash, hash at covered_seq or None)."""
    hash_ = chain_start(session_id)
    at_covered = None
    events = 0
    for seq, text in enumerate(lines):
        hash_ = event_hash(hash_, seq, text)
        if verbose:
            check.info(f"session {quoted(session_id)}: seq {seq}: {hash_.hex()}")
        if seq == covered_seq:
            at_covered = hash_
        events = seq + 1
    return events, hash_, at_covered


def root_hash(heads):
    root = hashlib.sha256()
    for session_id, last_seq, head_hash in heads:
        root.update(chain_start(session_id) + last_seq.to_bytes(8, "big") + bytes.fromhex(head_hash))
    return root.hexdigest()


def read_digest(path):
    """(body line bytes, body, signature or None); raises ValueError saying what is wrong."""
    with open(path, "rb") as file:
        lines = file.read().split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if not 1 <= len(lines) <= 2:
        raise ValueError(f"not an os-audit digest (expected a body line and at most a signature line, found {len(lines)} lines)")
    try:
        body = json.loads(lines[0])
        signature = json.loads(lines[1]) if len(lines) == 2 else None
    except ValueError as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(body, dict) or body.get("format") != DIGEST_FORMAT:
        raise ValueError(f'line 1: not an os-audit digest of format "{DIGEST_FORMAT}"')
    if not isinstance(body.get("heads"), list) or not all(is_head(head) for head in body["heads"]):
        raise ValueError('line 1: field "heads": expected an array of [session id, last seq, head hash in hex]')
    if signature is not None and (not isinstance(signature, dict) or signature.get("algorithm") != "ed25519"):
        raise ValueError('line 2: field "algorithm": expected "ed25519"')
    return lines[0], body, signature


def is_head(head):
    return (
        isinstance(head, list)
        and len(head) == 3
        and isinstance(head[0], str)
        and isinstance(head[1], int)
        and head[1] >= 0
        and isinstance(head[2], str)
        and len(head[2]) == 64
        and all(c in "0123456789abcdef" for c in head[2])
    )


def signature_valid(body_line, signature, public_key):
    """True or False as openssl says, or a sentence when openssl could not check it."""
    with tempfile.TemporaryDirectory() as folder:
        body_file = os.path.join(folder, "body")
        signature_file = os.path.join(folder, "signature")
        with open(body_file, "wb") as file:
            file.write(body_line)
        with open(signature_file, "wb") as file:
            file.write(base64.b64decode(signature["signature"]))
        command = ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", public_key, "-rawin", "-in", body_file, "-sigfile", signature_file]
        try:
            result = subprocess.run(command, capture_output=True, text=True)
        except FileNotFoundError:
            return "openssl is not installed (OpenSSL 3.0 or later checks Ed25519)"
    if result.returncode == 0:
        return True
    if "Signature Verification Failure" in result.stdout:
        return False
    detail = (result.stderr or result.stdout).strip().splitlines()
    return f"openssl: {detail[0] if detail else 'exit code ' + str(result.returncode)}"


def check_digest(path, public_key, check):
    """The digest's body, after checking its root and, with a key, its signature; None when unreadable."""
    try:
        body_line, body, signature = read_digest(path)
    except OSError as error:
        check.problem(f"digest {path}: cannot read it: {error.strerror}")
        return None
    except ValueError as error:
        check.problem(f"digest {path}: {error}")
        return None
    problems = []
    facts = [f"{body.get('sessions')} sessions, {body.get('events')} events, made {body.get('created_at')}", f"its hash {hashlib.sha256(body_line).hexdigest()}"]
    if root_hash(body["heads"]) == body.get("root"):
        facts.append("root matches its heads")
    else:
        problems.append("its root is not the hash of its heads: the file was edited")
    if public_key is None:
        facts.append("signature not checked (no --public-key)" if signature else "not signed")
    elif signature is None:
        problems.append("it is not signed, but --public-key asks for a signature")
    else:
        valid = signature_valid(body_line, signature, public_key)
        if valid is True:
            facts.append(f"signature valid for {public_key}")
        elif valid is False:
            problems.append(f"its signature is not valid for {public_key}: the file was edited, or another key signed it")
        else:
            problems.append(f"its signature was not checked: {valid}")
    check.info(f"digest {path}: {'; '.join(facts)}")
    for problem in problems:
        check.problem(f"digest {path}: {problem}")
    return body


def check_session(session_id, lines, covered, verbose, check):
    """Recomputes the session's chain; against `covered` = (last seq, head hash hex) when a digest is given."""
    label = f"session {quoted(session_id)}"
    events, head, at_covered = recompute(session_id, lines, verbose, check, covered[0] if covered else None)
    if events == 0:
        check.problem(f"{label}: no events to check")
        return
    line = f"{label}: {events} events, seq 0 to {events - 1}: head {head.hex()}" if events > 1 else f"{label}: 1 event, seq 0: head {head.hex()}"
    if covered is None:
        check.info(line)
        return
    last_seq, digest_head = covered
    if at_covered is None:
        check.info(line)
        check.problem(f"{label}: the log ends at seq {events - 1}, but the digest covers it up to seq {last_seq}: events are missing")
    elif at_covered.hex() != digest_head:
        check.info(line)
        check.problem(f"{label}: seq {last_seq}: hash {at_covered.hex()}, but the digest holds {digest_head}: the log up to seq {last_seq} is not the one the digest covers")
    else:
        after = events - 1 - last_seq
        later = f" ({after} later {'event' if after == 1 else 'events'}, after the digest)" if after > 0 else ""
        check.info(f"{line}; seq {last_seq} matches the digest's head{later}")


def main():
    parser = argparse.ArgumentParser(
        description="Recompute os-audit's hash chain of a session from the lines of `os-audit events SESSION --bare` on standard input, and check it against a digest.",
        epilog="Exit code: 0 when everything matches, 1 when anything differs or cannot be read, 2 on a usage error. See docs/integrity.md.",
    )
    parser.add_argument("session", nargs="?", help="the session id whose events are on standard input")
    parser.add_argument("--digest", metavar="FILE", help="check the session's head against this digest (its root too)")
    parser.add_argument("--public-key", metavar="FILE", help="with --digest: the Ed25519 public key (PEM, FILE.pub of digest --new-key) its signature must verify with")
    parser.add_argument("--all-from", metavar="DIR", help="with --digest: check every session of the digest against DIR/SESSION.jsonl instead of standard input")
    parser.add_argument("--verbose", action="store_true", help="print each seq's hash")
    args = parser.parse_args()
    if (args.session is None) == (args.all_from is None):
        parser.error("give a SESSION (its events on standard input) or --all-from DIR")
    if args.all_from is not None and args.digest is None:
        parser.error("--all-from checks the sessions of a digest: give --digest FILE too")
    if args.public_key is not None and args.digest is None:
        parser.error("--public-key checks the signature of --digest: give --digest FILE too")

    check = Check()
    heads = None
    if args.digest is not None:
        body = check_digest(args.digest, args.public_key, check)
        if body is None:
            return check.finish()
        heads = {session_id: (last_seq, head_hash) for session_id, last_seq, head_hash in body["heads"]}

    if args.session is not None:
        covered = None
        if heads is not None:
            covered = heads.get(args.session)
            if covered is None:
                check.problem(f"session {quoted(args.session)}: not in the digest: nothing to check it against")
        check_session(args.session, event_lines(sys.stdin.buffer), covered, args.verbose, check)
    elif not os.path.isdir(args.all_from):
        check.problem(f"{args.all_from}: not a folder: --all-from takes a folder of SESSION.jsonl files")
    else:
        for session_id, last_seq, head_hash in body["heads"]:
            path = os.path.join(args.all_from, f"{session_id}.jsonl")
            try:
                with open(path, "rb") as file:
                    check_session(session_id, event_lines(file), (last_seq, head_hash), args.verbose, check)
            except OSError as error:
                check.problem(f"session {quoted(session_id)}: cannot read {path} ({error.strerror}), but the digest covers it up to seq {last_seq}")
        for name in sorted(os.listdir(args.all_from)):
            if name.endswith(".jsonl") and name[: -len(".jsonl")] not in heads:
                check.problem(f"session {quoted(name[: -len('.jsonl')])}: {name} is not in the digest: nothing to check it against")

    return check.finish(heads is not None)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # A reader such as `head` stopped reading: nothing more to say, and no traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
