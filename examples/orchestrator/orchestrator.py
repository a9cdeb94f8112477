#!/usr/bin/env python3
"""An agent orchestrator that runs tool calls through corral.

It plays the part of an agent runtime: each tool call a model asks for runs
as `corral exec` with the sample skills of this repository, corral's JSON
report comes back on a descriptor of its own (--report-fd) and corral's
messages on another (--log-fd), so the command's stdout and stderr are the
command's alone. From the report (docs/report.md) it writes the tool result
a model gets: the output, or what stopped the command and what would let
it through, in words the model can act on.

Each run also gets an ask channel (--ask-fd, docs/ask.md): one end of a
socketpair on which corral asks about a host no rule lists and a command
line the agent policy wants confirmed. A thread answers by the
orchestrator's rules: allow-once for a host it was told to trust
(--trust HOST) and deny any other; allow-once for a command whose program
it trusts (--trust-command, python3 unless told) and deny any other. What
was asked and answered goes into the tool result.

Standard library only. Run it from anywhere:

    python3 examples/orchestrator/orchestrator.py [--corral PATH] [--trust HOST]... [--json]

It needs nothing from the network: the web requests go to an HTTP server
it starts on 127.0.0.1, under made-up names pinned with --resolve.
"""

import argparse
import http.server
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
REPORT_VERSION = 1  # the schema_version this orchestrator reads
ASK_VERSION = 1  # the ask protocol this orchestrator speaks (docs/ask.md)
ASK_TIMEOUT = 10  # seconds corral waits for an answer (--ask-timeout)
DECIDE_WITHIN = 5  # seconds the orchestrator gives its own rule before it denies


class Server(http.server.ThreadingHTTPServer):
    """A local web server that counts the requests it gets, by Host."""

    def __init__(self):
        self.requests = 0
        self.hosts = {}
        lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(handler):
                with lock:
                    self.requests += 1
                    host = handler.headers.get("Host", "")
                    self.hosts[host] = self.hosts.get(host, 0) + 1
                body = b"the local API's answer\n"
                handler.send_response(200)
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                handler.wfile.write(body)

            def log_message(handler, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def tool_calls(skills, local_api, port):
    """The tool calls a model might make: each runs with one skill."""
    python_data = str(skills / "python-data")
    web_fetch = str(skills / "web-fetch")
    pins = ["--resolve", "api.test=127.0.0.1", "--resolve", "untrusted.test=127.0.0.1"]
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
        {"id": "call-6", "what": "fetch from the API, a host the skill leaves to the orchestrator", "skill": local_api,
         "argv": ["curl", "-fsS", "http://api.test:%d/status" % port], "flags": pins},
        {"id": "call-7", "what": "fetch from two hosts at once (two questions at once)", "skill": local_api,
         "argv": ["curl", "-fsS", "--no-progress-meter", "--parallel", "--parallel-immediate", "-w", "%{http_code} %{url}\n",
                  "-o", "/dev/null", "http://api.test:%d/a" % port, "-o", "/dev/null", "http://untrusted.test:%d/b" % port],
         "flags": pins},
        {"id": "call-8", "what": "a command line the agent policy wants confirmed", "skill": python_data,
         "argv": ["sh", "-c", "python3 %s > out/summary.txt" % (skills / "python-data" / "crunch.py")]},
    ]


def local_api_skill(root, port):
    """A copy of the example's local-api skill granting the port the server got."""
    src = (HERE / "skills" / "local-api" / "SKILL.md").read_text()
    text, n = re.subn(r"preset:loopback:\d+", "preset:loopback:%d" % port, src)
    if n != 1:
        raise SystemExit("%s: want one preset:loopback:PORT rule to point at the local server" % (HERE / "skills" / "local-api"))
    folder = os.path.join(root, "skills", "local-api")
    os.makedirs(folder)
    with open(os.path.join(folder, "SKILL.md"), "w") as f:
        f.write(text)
    return folder


class Answerer:
    """The orchestrator's end of one run's ask channel (docs/ask.md).

    A reader thread takes corral's questions one JSON line at a time; each
    question gets a thread of its own that decides it (a rule here, a
    person in a real runtime), so questions from many connections wait on
    each other only for the one lock around writing an answer line.
    Whatever the rule does not decide within DECIDE_WITHIN seconds (and
    before corral's own timeout_ms) is answered deny. End of input (corral
    exited, or broke the channel) ends the reader."""

    def __init__(self, sock, trust_hosts, trust_commands):
        self.sock = sock
        self.trust_hosts = trust_hosts
        self.trust_commands = trust_commands
        self.wlock = threading.Lock()
        self.lock = threading.Lock()
        self.log = []  # {"question", "answer", "why", "sent"} in the order asked
        self.bad = []  # lines that were not questions
        self.workers = []
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def rule(self, q):
        """The answer and why. Hosts and commands are the sandboxed command's choice: compared, never run."""
        if q.get("kind") == "network":
            host = q.get("host", "")
            if host in self.trust_hosts:
                return "allow-once", "%s is a host the orchestrator trusts (--trust)" % host
            return "deny", "%s is not a host the orchestrator trusts (--trust)" % host
        if q.get("kind") == "command":
            program = os.path.basename(q.get("program", ""))
            if program in self.trust_commands:
                return "allow-once", "%s is a program the orchestrator trusts (--trust-command)" % program
            return "deny", "%s is not a program the orchestrator trusts (--trust-command)" % (program or "the program")
        return "deny", "a kind of question the orchestrator does not know: %r" % q.get("kind")

    def read(self):
        f = self.sock.makefile("rb")
        try:
            for line in f:
                try:
                    q = json.loads(line)
                except ValueError:
                    q = None
                if not isinstance(q, dict) or q.get("type") != "question" or q.get("v") != ASK_VERSION or not q.get("id"):
                    self.bad.append(line.decode(errors="replace"))
                    continue
                w = threading.Thread(target=self.answer, args=(q,), daemon=True)
                self.workers.append(w)
                w.start()
        except OSError:
            pass  # the orchestrator closed its end: the run is over

    def answer(self, q):
        start = time.monotonic()
        window = min(DECIDE_WITHIN, q.get("timeout_ms", ASK_TIMEOUT * 1000) / 1000 * 0.8)
        decided = []
        t = threading.Thread(target=lambda: decided.append(self.rule(q)), daemon=True)
        t.start()
        t.join(window)
        reply, why = decided[0] if decided else ("deny", "the orchestrator did not decide within %gs" % window)
        line = json.dumps({"v": ASK_VERSION, "id": q["id"], "answer": reply, "by": "orchestrator"}) + "\n"
        sent = True
        with self.wlock:
            try:
                self.sock.sendall(line.encode())
            except OSError:
                sent = False  # corral is gone: it denied the question itself
        with self.lock:
            self.log.append({"question": q, "answer": reply, "why": why, "sent": sent,
                             "late": time.monotonic() - start > q.get("timeout_ms", 0) / 1000})

    def finish(self):
        """After corral exited: its end is closed, so the reader sees EOF."""
        self.reader.join(10)
        for w in self.workers:
            w.join(10)
        self.sock.close()
        return self.log, self.bad


def run_tool(corral, call, work, data, trust_hosts, trust_commands):
    """Run one tool call in corral; return the process, the report, corral's messages and the questions answered."""
    # Files, not pipes: corral writes the report at the end and its
    # messages whenever, and reading three pipes at once needs threads.
    # The ask channel is a socket: corral and the answerer talk both ways.
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with tempfile.TemporaryFile() as report, tempfile.TemporaryFile() as log:
        try:
            asker = Answerer(mine, trust_hosts, trust_commands)
            argv = [corral, "exec", "--skill", call["skill"], "--work-dir", work, "--data-dir", data,
                    "--policy", str(HERE / "policy.yaml"),
                    "--report-fd", str(report.fileno()), "--log-fd", str(log.fileno()),
                    "--ask-fd", str(theirs.fileno()), "--ask-timeout", "%ds" % ASK_TIMEOUT]
            argv += call.get("flags", []) + ["--"] + call["argv"]
            proc = subprocess.Popen(argv, pass_fds=(report.fileno(), log.fileno(), theirs.fileno()), cwd=work,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        finally:
            # corral has its copy; with ours closed, its exit is the channel's EOF.
            theirs.close()
        try:
            stdout, stderr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        answered, bad = asker.finish()
        proc = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
        report.seek(0)
        log.seek(0)
        raw = report.read().decode()
        messages = log.read().decode()
    rep = json.loads(raw) if raw else None
    if rep is not None and rep.get("schema_version") != REPORT_VERSION:
        raise SystemExit("corral wrote report schema_version %r; this orchestrator reads %d" % (rep.get("schema_version"), REPORT_VERSION))
    if bad:
        messages += "".join("ask channel: not a question: %r\n" % b for b in bad)
    return proc, rep, messages, answered


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


def asked_lines(rep, answered):
    """What corral asked and how it was answered, from the report's asked list.

    The report is what corral did (an answer that came too late, or a
    channel that broke, shows there as timeout or eof); the answerer's log
    adds the orchestrator's reason. Hosts and command lines are the
    sandboxed command's words: quoted, never run."""
    why = {a["question"]["id"]: a["why"] for a in answered}
    lines = []
    for entry in (rep or {}).get("asked") or []:
        q, a = entry["question"], entry["answer"]
        if q["kind"] == "network":
            what = "may the command reach %s %s?" % (q.get("method", ""), json.dumps("%s:%d" % (q.get("host", ""), q.get("port", 0))))
        else:
            what = "may the command line %s run? (the agent policy wants it confirmed)" % json.dumps(q.get("command", ""))
        line = "corral asked %s answer: %s (by %s)" % (what, a["answer"], a["by"])
        reason = why.get(q["id"]) if a["by"] == "orchestrator" else a.get("note")
        if reason:
            line += ": " + reason
        lines.append(line + ".")
    return lines


def tool_result(corral, call, proc, rep, work, data, answered):
    """The tool result for the model: ok, and what it can act on."""
    if rep is None:
        return False, "corral wrote no report (exit %d); nothing is known about the run." % proc.returncode
    ok, content = outcome(corral, call, proc, rep, work, data)
    return ok, "\n".join([content] + asked_lines(rep, answered))


def outcome(corral, call, proc, rep, work, data):
    out = proc.stdout.strip()
    if rep["stage"] != "command":
        # The command never ran: nothing changed.
        if rep["denials"]:
            why = " ".join(d["reason"] for d in rep["denials"])
            if any(e["question"]["kind"] == "command" and e["answer"]["answer"] == "deny" for e in rep.get("asked") or []):
                return False, ("The orchestrator did not confirm this command line, so it did not run: %s. "
                               "Do not retry it as is: run a program the orchestrator trusts directly, without a shell." % why)
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
    ap.add_argument("--trust", action="append", default=[], metavar="HOST",
                    help="answer allow-once when corral asks about HOST (repeat for more); any other host is denied")
    ap.add_argument("--trust-command", action="append", metavar="PROGRAM",
                    help="answer allow-once when corral asks to confirm a command line run by PROGRAM (repeat for more; default python3); any other is denied")
    ap.add_argument("--json", action="store_true", help="print one JSON tool result per line")
    args = ap.parse_args()
    trust_commands = args.trust_command if args.trust_command is not None else ["python3"]

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
        port = server.server_address[1]
        for call in tool_calls(Path(args.skills), local_api_skill(root, port), port):
            proc, rep, messages, answered = run_tool(args.corral, call, work, data, args.trust, trust_commands)
            ok, content = tool_result(args.corral, call, proc, rep, work, data, answered)
            if args.json:
                print(json.dumps({"tool_call_id": call["id"], "argv": call["argv"], "ok": ok, "content": content,
                                  "exit_code": proc.returncode, "stage": rep and rep["stage"],
                                  "stdout": proc.stdout, "stderr": proc.stderr, "corral_messages": messages,
                                  "asked": (rep or {}).get("asked") or [], "answered": answered}), flush=True)
                continue
            print("== %s: %s\n$ %s" % (call["id"], call["what"], shlex.join(call["argv"])))
            if messages:
                print("corral said (--log-fd): " + messages.strip().replace("\n", "\n  "))
            print("tool result for the model (%s):\n  %s\n" % ("ok" if ok else "failed", content.replace("\n", "\n  ")), flush=True)
    finally:
        server.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps({"local_server_requests": server.requests, "local_server_hosts": server.hosts}))
    else:
        print("The local web server got %d request(s): %s." % (server.requests, ", ".join(
            "%d for %s" % (n, h) for h, n in sorted(server.hosts.items())) or "none"))


if __name__ == "__main__":
    main()
