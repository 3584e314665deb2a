#!/usr/bin/env python3
"""A hermitcrab program in Python, written from design/protocol.md alone.

Standard library only: JSON lines on stdin/stdout, nothing else. It reads its
arguments with scope([$HC_PROCESS_ID]), does what its `input/fixture` argument
says (`mode`), and answers by committing `engine/output` chunks onto its own
process. The engine tests use its modes to exercise runs, boundaries,
subscriptions and every fault the engine must survive.
"""
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

ME = os.environ["HC_PROCESS_ID"]
assert os.environ["HC_PROTOCOL"] == "1"


class Engine:
    """Requests with increasing ids; responses matched by id; events kept."""

    def __init__(self):
        self.next_id = 0
        self.events = []
        self.responses = {}

    def send(self, op, **fields):
        self.next_id += 1
        sys.stdout.write(json.dumps({"id": self.next_id, "op": op, **fields}) + "\n")
        sys.stdout.flush()
        return self.next_id

    def read(self):
        line = sys.stdin.readline()
        if not line:
            raise EOFError("the engine closed stdin")
        message = json.loads(line)
        if "event" in message:
            self.events.append(message)
        else:
            self.responses[message["id"]] = message
        return message

    def wait(self, rid):
        while rid not in self.responses:
            self.read()
        return self.responses.pop(rid)

    def call(self, op, **fields):
        return self.wait(self.send(op, **fields))

    def result(self, op, **fields):
        answer = self.call(op, **fields)
        if "error" in answer:
            raise RuntimeError("%s failed: %s" % (op, answer["error"]))
        return answer["result"]

    def next_event(self, timeout=10.0):
        deadline = time.time() + timeout
        while not self.events and time.time() < deadline:
            self.read()
        return self.events.pop(0) if self.events else None


engine = Engine()


def output(data):
    """Commits one output: text for people, data for tests."""
    chunk = {
        "body": {"text": json.dumps(data), "data": data},
        "placements": [
            {"scope": ME, "type": "instance"},
            {"scope": "engine/output", "type": "instance"},
        ],
    }
    return engine.result("commit", declaration={"chunks": [chunk]})


NAMES = {"$me": ME}


def substitute(value):
    """`$me` (this process), `$child` (one it spawned) and `$arg` (its
    argument chunk) in any string of a request stand for those ids."""
    if isinstance(value, str):
        for name, real in NAMES.items():
            value = value.replace(name, real)
        return value
    if isinstance(value, list):
        return [substitute(v) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v) for k, v in value.items()}
    return value


def child_args(task):
    args = {"chunks": [{
        "body": task.get("task", {}),
        "placements": [{"scope": "input/fixture", "type": "instance"}],
    }]}
    for key in ("readBoundary", "writeBoundary", "timeoutMs"):
        if key in task:
            args[key] = substitute(task[key])
    return args


def outputs_of(scope_result):
    return [c["body"].get("data") for c in scope_result["chunks"]
            if any(p["scope"] == "engine/output" for p in c["placements"])]


def probe(action):
    """Tries one thing a contained program may or may not do: "ok", or why not."""
    kind = action["do"]
    try:
        if kind == "write":
            with open(action["path"], "w") as f:
                f.write("written by a program")
        elif kind == "read":
            with open(action["path"]) as f:
                f.read()
        elif kind == "symlink-write":
            os.symlink(action["target"], action["link"])
            with open(os.path.join(action["link"], "through-link"), "w") as f:
                f.write("x")
        elif kind == "tcp":
            socket.create_connection(("127.0.0.1", action["port"]), timeout=5).close()
        elif kind == "udp":
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(b"hello over udp", ("127.0.0.1", action["port"]))
            s.close()
        elif kind == "unix-connect":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect("\0" + action["name"])  # an abstract socket
            finally:
                s.close()
        elif kind == "unix-path-connect":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(action["path"])  # a socket file
                s.sendall(b"hello over a socket file")
            finally:
                s.close()
        elif kind == "unix-dgram-send":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                s.sendto(b"hello by datagram", action["path"])
            finally:
                s.close()
        elif kind == "unix-serve":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.bind("\0" + action["name"])
                s.listen(1)
                with open(action["ready"], "w") as f:
                    f.write("listening")
                s.settimeout(action["seconds"])
                try:
                    s.accept()[0].close()
                except socket.timeout:
                    return "silent"
            finally:
                s.close()
            return "heard"
        elif kind == "file-contains":
            with open(action["path"], "rb") as f:
                return "found" if action["needle"].encode() in f.read() else "absent"
        elif kind == "netns":
            return os.readlink("/proc/self/ns/net")
        elif kind == "ptrace":
            # a process of its own, so the target is surely visible to it
            target = subprocess.Popen(["sleep", "30"])
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.ptrace(16, target.pid, 0, 0) != 0:  # PTRACE_ATTACH
                    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
                os.waitpid(target.pid, 0x40000000)  # __WALL: the tracee stops
                libc.ptrace(17, target.pid, 0, 0)  # PTRACE_DETACH
            finally:
                target.kill()
                target.wait()
        elif kind == "env":
            if action["name"] not in os.environ:
                return "unset"
            return "set: " + os.environ[action["name"]]
        else:
            return "unknown action %r" % kind
        return "ok"
    except OSError as e:
        return "denied: %s" % (e.strerror or e)


def main():
    process = engine.result("scope", scopes=[ME])
    inputs = [c for c in process["chunks"]
              if any(p["scope"] == "input/fixture" and p["type"] == "instance" for p in c["placements"])]
    task = inputs[0]["body"] if inputs else {}
    if inputs:
        NAMES["$arg"] = inputs[0]["id"]
    mode = task.get("mode", "output")

    if mode == "output":
        output({"echo": task.get("text"), "arguments": len(inputs)})
    elif mode == "ops":
        if "spawn" in task:
            NAMES["$child"] = engine.result("run", program=task["spawn"]["program"],
                                            args=child_args(task["spawn"]))["process"]
        results = []
        for request in task["ops"]:
            request = substitute(request)
            op = request.pop("op")
            answer = engine.call(op, **request)
            if "error" in answer:
                results.append({"ok": False, "code": answer["error"]["code"], "message": answer["error"]["message"]})
            else:
                results.append({"ok": True, "result": answer["result"]})
        output({"results": results})
    elif mode == "run":
        child = engine.result("run", program=task["program"], args=child_args(task))["process"]
        final = engine.result("await", processes=[child])[child]
        body = final["scopes"][0]["body"]
        output({"child": child, "status": body["status"], "error": body.get("error"),
                "outputs": outputs_of(final)})
    elif mode == "parallel":
        ids = [engine.result("run", program=task["program"], args=child_args(t))["process"] for t in task["tasks"]]
        finals = engine.result("await", processes=ids)
        output({"children": ids, "outputs": [outputs_of(finals[i]) for i in ids]})
    elif mode == "fire":
        child = engine.result("run", program=task["program"], args=child_args(task))["process"]
        output({"working": "while the child runs"})
        final = engine.result("await", processes=[child])[child]
        output({"child": child, "outputs": outputs_of(final)})
    elif mode == "garbage":
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
        time.sleep(30)
    elif mode == "exit":
        sys.stderr.write(task.get("stderr", ""))
        sys.stderr.flush()
        sys.exit(task["code"])
    elif mode == "later":
        # after a while, what it asks answered into a file (a run fenced
        # meanwhile could not record them in the substrate)
        time.sleep(task.get("seconds", 1))
        answers = []
        for request in task["ops"]:
            request = substitute(request)
            op = request.pop("op")
            answer = engine.call(op, **request)
            answers.append(answer["error"]["code"] if "error" in answer else "ok")
        with open(task["report"], "w") as f:
            json.dump(answers, f)
    elif mode == "hang":
        time.sleep(task.get("seconds", 1000))
    elif mode == "fork":
        children = [subprocess.Popen(["sleep", "1000"]) for _ in range(task.get("n", 2))]
        output({"pids": [c.pid for c in children]})
        time.sleep(1000)
    elif mode == "flood":
        # As fast as it can: one thread writes every request while this one
        # reads the answers (a program that never reads would stall on a full
        # pipe, as with any bounded buffer, and end by its timeout).
        n = task["n"]

        def write_all():
            for i in range(n):
                sys.stdout.write(json.dumps({"id": 1000 + i, "op": "scope", "scopes": [ME], "opts": {"limit": 1}}) + "\n")
            sys.stdout.flush()

        writer = threading.Thread(target=write_all)
        writer.start()
        ok = 0
        for _ in range(n):
            message = engine.read()
            if "result" in message:
                ok += 1
        writer.join()
        engine.responses.clear()
        output({"answered": ok})
    elif mode == "signal":
        os.kill(os.getpid(), task.get("signal", signal.SIGKILL))
        time.sleep(5)
    elif mode == "subscribe":
        sub = engine.result("subscribe", scopes=[ME])["subscriptionId"]
        output({"subscribed": sub})
        event = engine.next_event()
        output({"event": event})
    elif mode == "watch":
        sub = engine.result("subscribe", scopes=[task["scope"]], opts={"deep": task.get("deep", False)})["subscriptionId"]
        output({"subscribed": sub})
        if "until" in task:
            seen = []
            while True:
                event = engine.next_event(timeout=task.get("timeout", 20))
                seen.append(event)
                if event is None or event["event"] == task["until"]:
                    break
            output({"events": seen})
        else:
            output({"event": engine.next_event(timeout=task.get("timeout", 20))})
    elif mode == "probe":
        output({"results": [probe(action) for action in task["actions"]]})
    elif mode == "escape":
        # a grandchild in a session of its own: out of the process group
        child = subprocess.Popen(["setsid", "sleep", "1000"])
        output({"grandchild": child.pid})
        time.sleep(1000)
    elif mode == "notify":
        engine.result("notify", data={"kind": "text_delta", "text": task.get("text", "Hel")})
        output({"notified": True})
    elif mode == "finish_leaving_a_child":
        # a child still running when its parent finishes (and lingers)
        child = engine.result("run", program=task["program"], args=child_args(task))["process"]
        engine.result("finish", status="completed",
                      output={"text": child, "data": {"child": child}, "is_error": False})
        time.sleep(30)
    elif mode == "finish_with_output":
        # its result and its end in one op: the engine commits both at once
        text = "x" * task.get("size", 5)
        extra = {"body": {"pid": 1, "status": "failed", "containment": "forged", "webview": "elsewhere.html", "totals": "kept"}} if task.get("forge") else {}
        engine.result("finish", status="completed",
                      output={"text": text, "data": {"fused": True}, "is_error": False}, **extra)
        time.sleep(task.get("linger", 0))
        sys.exit(3)
    elif mode == "finish":
        # its output, then its end, before it exits (with a code that would
        # fail it, were the end not already committed)
        output({"finished": True})
        engine.result("finish", status=task.get("status", "completed"), error=task.get("error"))
        sys.exit(3)
    else:
        raise SystemExit("unknown mode %r" % mode)


if __name__ == "__main__":
    main()
