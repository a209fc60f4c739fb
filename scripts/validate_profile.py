#!/usr/bin/env python3
"""Validate Liftoff profile.json files against Schemas/profile-N.schema.json.

Usage: python3 scripts/validate_profile.py FILE...

The schema is chosen by each file's "schema" field ("liftoff.profile/N"). Prints one line per
file, `FILE: valid (liftoff.profile/N)` or `FILE: <json path>: <message>`, and exits 0 only when
every file is valid (1 otherwise, 2 for a usage error).
"""
import json
import re
import sys
from pathlib import Path

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

SCHEMAS = Path(__file__).resolve().parent.parent / "Schemas"
MAX_MESSAGE = 240


class Unusable(Exception):
    """A file that cannot be checked at all; its message is one sentence."""


def reject_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def load(path):
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as error:
        raise Unusable(f"cannot be read ({error.strerror or error}).")
    except UnicodeDecodeError:
        raise Unusable("is not UTF-8 text, so it is not a profile.")
    try:
        return json.loads(text, parse_constant=reject_constant)
    except (ValueError, RecursionError) as error:
        raise Unusable(f"is not valid JSON ({error}).")


def validator_for(document, cache):
    if not isinstance(document, dict):
        raise Unusable("is not a Liftoff profile: the document is not a JSON object.")
    schema = document.get("schema")
    if not isinstance(schema, str):
        raise Unusable('is not a Liftoff profile: it has no "schema" string.')
    match = re.fullmatch(r"liftoff\.profile/(\d+)", schema)
    schema_file = SCHEMAS / f"profile-{match.group(1)}.schema.json" if match else None
    if schema_file is None or not schema_file.is_file():
        names = (re.fullmatch(r"profile-(\d+)\.schema\.json", p.name) for p in SCHEMAS.glob("profile-*"))
        known = " and ".join(sorted(f'"liftoff.profile/{name.group(1)}"' for name in names if name)) or "none"
        raise Unusable(f'has schema "{schema}", which is not one of the known schemas ({known}).')
    if schema not in cache:
        definition = json.loads(schema_file.read_text())
        Draft202012Validator.check_schema(definition)
        cache[schema] = Draft202012Validator(definition)
    return schema, cache[schema]


def shorten(message):
    if len(message) <= MAX_MESSAGE:
        return message
    half = MAX_MESSAGE // 2
    return f"{message[:half]} … {message[-half:]}"


def check(path, cache):
    """Returns (is_valid, line)."""
    try:
        document = load(path)
        schema, validator = validator_for(document, cache)
    except Unusable as problem:
        return False, f"{path}: {problem}"
    errors = list(validator.iter_errors(document))
    if not errors:
        return True, f"{path}: valid ({schema})"
    error = best_match(errors)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return False, f"{path}: {error.json_path}: {shorten(error.message)}{more}"


def main(arguments):
    if arguments in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if not arguments:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cache = {}
    all_valid = True
    for path in arguments:
        valid, line = check(path, cache)
        print(line)
        all_valid = all_valid and valid
    return 0 if all_valid else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
