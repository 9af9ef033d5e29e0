#!/usr/bin/env python3
"""Finds decision-log lines that match every KEY=VALUE given.

    decisions.py LOG [--count N] [--wait SECONDS] KEY=VALUE...

VALUE 'null' matches JSON null; KEY~=TEXT matches when TEXT occurs in the value
(as JSON, so it works for lists such as notes). Prints the matching lines. Exit 0 when at least one
line matches (exactly N with --count), 1 otherwise. The log is written asynchronously,
so it is re-read until --wait seconds pass (default 5)."""
import json
import sys
import time


def matches(obj, conditions):
    for key, want in conditions:
        if key.endswith("~"):
            if want not in json.dumps(obj.get(key[:-1])):
                return False
            continue
        have = obj.get(key, "<absent>")
        if have is None:
            have = "null"
        if str(have) != want:
            return False
    return True


def main():
    args = sys.argv[1:]
    path, args = args[0], args[1:]
    count, wait = None, 5.0
    conditions = []
    while args:
        a = args.pop(0)
        if a == "--count":
            count = int(args.pop(0))
        elif a == "--wait":
            wait = float(args.pop(0))
        else:
            key, _, value = a.partition("=")
            conditions.append((key, value))
    deadline = time.monotonic() + wait
    while True:
        found, near = [], []
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    obj = json.loads(line)  # a line that is not JSON fails the test loudly
                    missed = [k for k, v in conditions if not matches(obj, [(k, v)])]
                    if not missed:
                        found.append(line.rstrip("\n"))
                    elif len(missed) == 1:
                        near.append(f"{line.rstrip()}  (differs in {missed[0].rstrip('~')})")
        except FileNotFoundError:
            pass
        ok = len(found) == count if count is not None else len(found) > 0
        if ok or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    for line in found:
        print(line)
    if not ok:
        # What a failed check nearly matched says why it failed (a flaky run leaves no log).
        print(f"{len(found)} line(s) match; lines that differ in one field:", *near[-5:] or ["none"], sep="\n  ")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
