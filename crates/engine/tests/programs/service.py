#!/usr/bin/env python3
"""A hermitcrab service program in Python, from design/protocol.md alone.

It says what it serves by committing program chunks it manages
(`capabilities.programs`), says `ready`, then carries out each run the
engine hands it (`{"event":"run"}`) on a thread of its own: it reads the
run's argument with `scope` on the run's behalf, commits the run's output
onto the run's process, and ends it with `finish`. `FIXTURE_SERVICE` (JSON,
from the host) says how it behaves: `{"exit_at_start": CODE}` exits before
`ready`; `{"tools": [NAME…]}` are the programs it commits; `{"attempt":
[CHUNK…]}` are commits it tries, their error codes its output.
"""
import json
import os
import sys
import threading

ME = os.environ["HC_PROCESS_ID"]
CONFIG = json.loads(os.environ.get("FIXTURE_SERVICE", "{}"))
LOCK = threading.Lock()
WAITING = {}  # request id -> [event, response]
CANCELLED = {}  # process -> threading.Event
NEXT = [0]


def send(op, process=None, **fields):
    with LOCK:
        NEXT[0] += 1
        rid = NEXT[0]
        slot = [threading.Event(), None]
        WAITING[rid] = slot
        request = {"id": rid, "op": op, **fields}
        if process is not None:
            request["process"] = process
        sys.stdout.write(json.dumps(request) + "\n")
        sys.stdout.flush()
    slot[0].wait()
    return slot[1]


def result(op, process=None, **fields):
    answer = send(op, process, **fields)
    if "error" in answer:
        raise RuntimeError("%s: %s" % (answer["error"]["code"], answer["error"]["message"]))
    return answer["result"]


def output(process, data):
    """Commits one output on `process`: a run's (for it), or this one's."""
    chunk = {
        "body": {"text": json.dumps(data), "data": data},
        "placements": [
            {"scope": process, "type": "instance"},
            {"scope": "engine/output", "type": "instance"},
        ],
    }
    return send("commit", None if process == ME else process, declaration={"chunks": [chunk]})


def serve(process, program):
    try:
        read = result("scope", process, scopes=[process])
        args = [c["body"] for c in read["chunks"]
                if any(p["scope"].startswith("input/") for p in c["placements"])]
        task = args[0] if args else {}
        mode = task.get("mode", "echo")
        if mode == "echo":
            send("notify", process, data={"kind": "progress", "progress": 0.5})
            output(process, {"echo": task.get("text"), "program": program, "by": ME})
            send("finish", process, status="completed")
        elif mode == "fail":
            send("finish", process, status="failed", error="asked to fail")
        elif mode == "hang":
            CANCELLED.setdefault(process, threading.Event()).wait()
            # the run is over: acting for it now is refused
            late = output(process, {"late": True})
            code = late.get("error", {}).get("code")
            mine = output(ME, {"cancelled": process, "late_commit": code})
            if "error" in mine:
                sys.stderr.write("cannot commit on my process: %s\n" % mine)
                sys.stderr.flush()
        elif mode == "die":
            os._exit(7)
        elif mode == "outside":
            answer = send("commit", process, declaration={"chunks": [
                {"id": task["target"], "body": {"text": "overwritten"}}]})
            output(process, {"outside": answer.get("error", {}).get("code")})
            send("finish", process, status="completed")
        elif mode == "other":
            answer = send("scope", task["process"], scopes=[task["process"]])
            output(process, {"other": answer.get("error", {}).get("code")})
            send("finish", process, status="completed")
    except Exception as e:  # noqa: BLE001 - a fixture reports everything
        send("finish", process, status="failed", error=str(e))


def main():
    if "exit_at_start" in CONFIG:
        sys.exit(CONFIG["exit_at_start"])
    reader = threading.Thread(target=read_loop, daemon=True)
    reader.start()
    chunks = []
    for name in CONFIG.get("tools", []):
        chunks.append({"id": "program/" + name, "name": name,
                       "spec": {"propagate": True, "accepts": ["input/" + name]},
                       "body": {"executable": "-", "served_by": "svc", "text": "served",
                                "input_type": "input/" + name},
                       "placements": [{"scope": "engine/program", "type": "instance"}]})
        chunks.append({"id": "input/" + name, "body": {"text": name, "schema": {"type": "object"}},
                       "placements": [{"scope": "program/" + name, "type": "relates"}]})
    if chunks:
        result("commit", declaration={"chunks": chunks})
    # program chunks it tries to write as one it manages: each refusal's code
    refused = []
    for chunk in CONFIG.get("attempt", []):
        answer = send("commit", declaration={"chunks": [chunk]})
        refused.append(answer.get("error", {}).get("code"))
    if "attempt" in CONFIG:
        output(ME, {"attempts": refused})
    result("ready")
    reader.join()


def read_loop():
    for line in sys.stdin:
        message = json.loads(line)
        event = message.get("event")
        if event == "run":
            threading.Thread(target=serve, args=(message["process"], message["program"]),
                             daemon=True).start()
        elif event == "cancel":
            CANCELLED.setdefault(message["process"], threading.Event()).set()
        elif event is None:
            with LOCK:
                slot = WAITING.pop(message["id"], None)
            if slot:
                slot[1] = message
                slot[0].set()
    os._exit(0)


main()
