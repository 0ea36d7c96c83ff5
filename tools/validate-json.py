#!/usr/bin/env python3
"""Validates vblast's JSON outputs against the JSON Schemas under docs/schema/.

    tools/validate-json.py SCHEMA FILE...

SCHEMA is a file name (results.schema.json, report.schema.json) or a path; the other schemas
of its directory are loaded too, so that one may refer to another. FILE may be `-` (stdin).
Exit 0 when every file is valid; 1 with each error (its JSON path and the reason) when one
is not; 2 when the validator cannot run (no jsonschema package, an unreadable file).
Uses the Python jsonschema package (tools/deps.sh installs it into the tools venv).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_DIR = os.path.join(HERE, "..", "docs", "schema")


def fail(msg, status=2):
    print("validate-json: " + msg, file=sys.stderr)
    sys.exit(status)


def load(path):
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read {path}: {e}")


def main(argv):
    if len(argv) < 3:
        fail("usage: validate-json.py SCHEMA FILE...")
    try:
        import jsonschema
        from referencing import Registry, Resource
    except ImportError as e:
        fail(f"the Python jsonschema package is missing ({e}): run tools/deps.sh, or "
             f"pip install jsonschema into {sys.executable}'s environment")
    schema_path = argv[1]
    if os.sep not in schema_path:
        schema_path = os.path.join(SCHEMA_DIR, schema_path)
    schema_dir = os.path.dirname(os.path.abspath(schema_path))
    resources = []
    for name in sorted(os.listdir(schema_dir)):
        if name.endswith(".schema.json"):
            s = load(os.path.join(schema_dir, name))
            jsonschema.Draft202012Validator.check_schema(s)
            resources.append((s["$id"], Resource.from_contents(s)))
    registry = Registry().with_resources(resources)
    schema = load(schema_path)
    validator = jsonschema.Draft202012Validator(
        schema, registry=registry, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    bad = 0
    for path in argv[2:]:
        doc = load(path)
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors:
            # A oneOf's reasons are in its context: name the deepest ones.
            leaves = [c for c in e.context if not c.context] if e.context else []
            print(f"{path}: {e.json_path}: {e.message}", file=sys.stderr)
            for c in leaves[:8]:
                print(f"{path}:   {c.json_path}: {c.message}", file=sys.stderr)
        if errors:
            bad += 1
        else:
            print(f"{path}: valid against {os.path.basename(schema_path)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main(sys.argv)
