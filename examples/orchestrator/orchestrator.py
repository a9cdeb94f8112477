#!/usr/bin/env python3
"""An agent orchestrator that runs tool calls through corral.

It plays the part of an agent runtime: each tool call a model asks for runs
as `corral exec` with the sample skills of this repository, corral's JSON
report comes back on a descriptor of its own (--report-fd) and corral's
messages on another (--log-fd), so the command's stdout and stderr are the
command's alone. From the report (docs/report.md) it writes the tool result
a model gets: the output, or what stopped the command and what would let
it through, in words the model can act on.

Standard library only. Run it from anywhere:

    python3 examples/orchestrator/orchestrator.py [--corral PATH] [--json]

It needs nothing from the network: the one web request goes to an HTTP
server it starts on 127.0.0.1, under a made-up name pinned with
--resolve, and corral's egress proxy refuses it.
"""

import argparse
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REPORT_VERSION = 1  # the schema_version this orchestrator reads


class Server(http.server.ThreadingHTTPServer):
    """A local web server that counts the requests it gets."""

    def __init__(self):
        self.requests = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(handler):
                self.requests += 1
                body = b"a page the sandbox must not reach\n"
                handler.send_response(200)
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                handler.wfile.write(body)

            def log_message(handler, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def tool_calls(skills, port):
    """The tool calls a model might make: each runs with one skill."""
    python_data = str(skills / "python-data")
    web_fetch = str(skills / "web-fetch")
    return [
        {"id": "call-1", "what": "summarise the CSV files (allowed)", "skill": python_data,
         "argv": ["python3", str(skills / "python-data" / "crunch.py")]},
        {"id": "call-2", "what": "write a file outside the skill's write grants", "skill": python_data,
         "argv": ["python3", "-c", "open('notes.txt', 'w').write('draft')"]},
        {"id": "call-3", "what": "run a program the skill does not list", "skill": python_data,
         "argv": ["curl", "-fsS", "http://blocked.test:%d/" % port]},
        {"id": "call-4", "what": "fetch from a host the skill does not allow", "skill": web_fetch,
         "argv": ["curl", "-fsS", "http://blocked.test:%d/" % port],
         "flags": ["--resolve", "blocked.test=127.0.0.1"]},
        {"id": "call-5", "what": "a job that runs past its time limit", "skill": python_data,
         "argv": ["python3", "-c", "import time; time.sleep(30)"],
         "flags": ["--timeout", "1s", "--kill-grace", "1s"]},
    ]


def run_tool(corral, call, work, data):
    """Run one tool call in corral; return the process, the report and corral's messages."""
    # Files, not pipes: corral writes the report at the end and its
    # messages whenever, and reading three pipes at once needs threads.
    with tempfile.TemporaryFile() as report, tempfile.TemporaryFile() as log:
        argv = [corral, "exec", "--skill", call["skill"], "--work-dir", work, "--data-dir", data,
                "--report-fd", str(report.fileno()), "--log-fd", str(log.fileno())]
        argv += call.get("flags", []) + ["--"] + call["argv"]
        proc = subprocess.run(argv, pass_fds=(report.fileno(), log.fileno()), cwd=work,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        report.seek(0)
        log.seek(0)
        raw = report.read().decode()
        messages = log.read().decode()
    rep = json.loads(raw) if raw else None
    if rep is not None and rep.get("schema_version") != REPORT_VERSION:
        raise SystemExit("corral wrote report schema_version %r; this orchestrator reads %d" % (rep.get("schema_version"), REPORT_VERSION))
    return proc, rep, messages


# What a command prints when the sandbox refused it a file: sh, coreutils
# and Python.
REFUSED_FILE = [
    re.compile(r"(?:cannot create|can't create) ([^:\n]+): (?:Permission denied|Read-only file system)"),
    re.compile(r"\[Errno (?:13|30)\] (?:Permission denied|Read-only file system): '([^'\n]+)'"),
    re.compile(r": cannot \w+ '([^'\n]+)': (?:Permission denied|Read-only file system)"),
]


def refused_paths(stderr):
    paths = []
    for pattern in REFUSED_FILE:
        for m in pattern.finditer(stderr):
            if m.group(1) not in paths:
                paths.append(m.group(1))
    return paths


def ask_writes(corral, skill, work, data, paths):
    """Ask corral check --stdin why each path cannot be written (answers matched by id)."""
    lines = "".join(json.dumps({"id": "w%d" % i, "kind": "write", "arg": p}) + "\n" for i, p in enumerate(paths))
    proc = subprocess.run([corral, "check", "--skill", skill, "--work-dir", work, "--data-dir", data, "--stdin"],
                          input=lines, capture_output=True, text=True, timeout=60)
    answers = {}
    for line in proc.stdout.splitlines():
        a = json.loads(line)
        answers[a.get("id")] = a
    return {p: answers.get("w%d" % i) for i, p in enumerate(paths)}


def seconds(ns):
    return "%gs" % (ns / 1e9)


def tool_result(corral, call, proc, rep, work, data):
    """The tool result for the model: ok, and what it can act on."""
    if rep is None:
        return False, "corral wrote no report (exit %d); nothing is known about the run." % proc.returncode
    out = proc.stdout.strip()
    if rep["stage"] != "command":
        # The command never ran: nothing changed.
        if rep["denials"]:
            why = " ".join(d["reason"] for d in rep["denials"])
            return False, ("The sandbox refused to run this command, so it did not run: %s. "
                           "Do not retry it as is: use a program the skill allows, or ask the user to grant this one." % why)
        return False, "corral could not run the command (%s stage, exit %d): %s" % (rep["stage"], rep["exit_code"], rep["error"])
    notes = []
    if rep["timed_out"]:
        limits = rep["limits"] or {}
        notes.append("The command was stopped after %s (the limit set by %s) and did not finish. "
                     "Do less in one call, or make it faster." % (seconds(limits.get("timeout_ns", 0)), limits.get("timeout_from", "corral")))
    if rep["oom_killed"]:
        notes.append("The command ran out of memory (limit %d MiB) and was killed." % (rep["limits"]["memory_bytes"] >> 20))
    seen = set()
    for d in rep["proxy_denials"]:
        key = (d["host"], d["port"])
        if key not in seen:
            seen.add(key)
            notes.append("The sandbox's network proxy refused %s %s:%d: %s." % (d["method"], d["host"], d["port"], d["reason"]))
    if rep["exit_code"] != 0 and not rep["timed_out"]:
        paths = refused_paths(proc.stderr)
        for path, answer in ask_writes(corral, call["skill"], work, data, paths).items():
            if answer and answer["action"] != "allow":
                notes.append("The sandbox does not let the command write %s: %s." % (path, answer["reason"]))
    ok = rep["exit_code"] == 0 and not notes
    head = "exit %d" % rep["exit_code"]
    if out:
        head += "; output:\n" + out
    if proc.stderr.strip() and not ok:
        head += "\nerrors:\n" + proc.stderr.strip()
    return ok, "\n".join([head] + notes)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corral", default=shutil.which("corral") or str(REPO / "bin" / "corral"), help="the corral binary")
    ap.add_argument("--skills", default=str(REPO / "skills"), help="the sample skills folder")
    # Not under /tmp: the sandbox has a /tmp of its own, and a workspace
    # there would take a write outside the grants without a complaint (into
    # the sandbox's /tmp, gone after the run) instead of refusing it.
    ap.add_argument("--root", default="/var/tmp", help="where to make the scratch workspace (not /tmp)")
    ap.add_argument("--json", action="store_true", help="print one JSON tool result per line")
    args = ap.parse_args()

    root = tempfile.mkdtemp(prefix="corral-orchestrator-", dir=args.root)
    os.chmod(root, 0o755)
    work, data = os.path.join(root, "work"), os.path.join(root, "data")
    os.makedirs(os.path.join(work, "data"))
    os.makedirs(data)
    with open(os.path.join(work, "data", "one.csv"), "w") as f:
        f.write("a,b\n1,2\n3,4\n")
    with open(os.path.join(work, "data", "two.csv"), "w") as f:
        f.write("x\n1\n")
    server = Server()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for call in tool_calls(Path(args.skills), server.server_address[1]):
            proc, rep, messages = run_tool(args.corral, call, work, data)
            ok, content = tool_result(args.corral, call, proc, rep, work, data)
            if args.json:
                print(json.dumps({"tool_call_id": call["id"], "argv": call["argv"], "ok": ok, "content": content,
                                  "exit_code": proc.returncode, "stage": rep and rep["stage"],
                                  "stdout": proc.stdout, "stderr": proc.stderr, "corral_messages": messages}), flush=True)
                continue
            print("== %s: %s\n$ %s" % (call["id"], call["what"], " ".join(call["argv"])))
            if messages:
                print("corral said (--log-fd): " + messages.strip().replace("\n", "\n  "))
            print("tool result for the model (%s):\n  %s\n" % ("ok" if ok else "failed", content.replace("\n", "\n  ")), flush=True)
    finally:
        server.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps({"local_server_requests": server.requests}))
    else:
        print("The local web server got %d request(s)." % server.requests)


if __name__ == "__main__":
    main()
