#!/usr/bin/env python3
"""A 2.1.3xx transcript made small for fuzzing (stdin to stdout), its
records still replaying: every string over 120 characters and every list
over 6 items is cut, except in user, assistant and api-request entries
(records rebuild messages from user and assistant entries and find them by
hash); shapes and blobs are hashed again (SHA-256 of the canonical JSON, as
`ctxasm::json::writer::message_hash`) and every record naming an old hash
is given the new one. A ~150 KB capture becomes 30-55 KB (several times the
executions per second) and replays the same requests, shorter. Lines that
are not JSON are kept as they are."""

import hashlib
import json
import sys

LIMIT = 120
ITEMS = 6
KEEP = {"user", "assistant", "api-request"}


def cut(v):
    if isinstance(v, str):
        return v[:LIMIT]
    if isinstance(v, list):
        return [cut(x) for x in v[:ITEMS]]
    if isinstance(v, dict):
        return {k: cut(x) for k, x in v.items()}
    return v


def canonical(v):
    if isinstance(v, dict):
        return {k: canonical(x) for k, x in v.items() if k != "cache_control"}
    if isinstance(v, list):
        return [canonical(x) for x in v]
    return v


def digest(v):
    text = json.dumps(canonical(v), separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def main():
    lines = sys.stdin.buffer.read().split(b"\n")
    renamed = {}
    out = []
    for raw in lines:
        try:
            j = json.loads(raw)
        except ValueError:
            out.append(raw)
            continue
        if not isinstance(j, dict) or j.get("type") in KEEP:
            out.append(raw)
            continue
        j = cut(j)
        if j.get("type") == "api-request-shape" and "shape" in j and "shapeHash" in j:
            new = digest(j["shape"])
            renamed[j["shapeHash"]] = new
            j["shapeHash"] = new
        if j.get("type") == "api-request-blob" and "message" in j and "hash" in j:
            new = digest(j["message"])
            renamed[j["hash"]] = new
            j["hash"] = new
        out.append(json.dumps(j, separators=(",", ":"), ensure_ascii=False).encode())
    for i, raw in enumerate(out):
        if b'"api-request"' not in raw:
            continue
        try:
            j = json.loads(raw)
        except ValueError:
            continue
        if isinstance(j, dict) and j.get("type") == "api-request":
            if j.get("shapeHash") in renamed:
                j["shapeHash"] = renamed[j["shapeHash"]]
            if isinstance(j.get("tail"), list):
                j["tail"] = [renamed.get(h, h) if isinstance(h, str) else h for h in j["tail"]]
            out[i] = json.dumps(j, separators=(",", ":"), ensure_ascii=False).encode()
    sys.stdout.buffer.write(b"\n".join(out))


if __name__ == "__main__":
    main()
