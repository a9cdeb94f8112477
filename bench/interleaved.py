#!/usr/bin/env python3
"""Interleaved launch benchmark: each round runs every command once, in a
shuffled order, so the machine's drift lands on all of them alike; wall
(perf_counter) and CPU (wait4's rusage: the child and every descendant it
reaped) per run; medians, and ratios to the command named bwrap.

    python3 bench/interleaved.py ROUNDS CMDS_JSON [DIR]

CMDS_JSON maps a name to an argv, or to {"argv": [...], "env": {...}} for
variables of its own (CORRAL_MOUNT_CACHE, so two builds of corral keep a
mount cache each). DIR is the working folder (the work dir corral sees). BENCH_STDOUT=pipe
gives each command pipes for stdout and stderr (read and dropped), as an
agent runtime that captures the output does; the default is /dev/null."""
import os, random, statistics, subprocess, sys, time, json

def run(argv, cwd, env):
    t = time.perf_counter()
    out = subprocess.PIPE if os.environ.get("BENCH_STDOUT") == "pipe" else subprocess.DEVNULL
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=out)
    if out == subprocess.PIPE:
        # Read to the end without reaping (wait4 below does): stdout,
        # then stderr, which is enough for commands that print little.
        p.stdout.read(); p.stderr.read(); p.stdout.close(); p.stderr.close()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, p.returncode

def main():
    rounds = int(sys.argv[1]); cmds = json.loads(sys.argv[2]); cwd = sys.argv[3] if len(sys.argv) > 3 else os.getcwd()
    env = dict(os.environ)
    res = {k: ([], []) for k in cmds}
    envs = {}
    for name, spec in list(cmds.items()):
        if isinstance(spec, dict):
            e = dict(env); e.update(spec.get("env", {})); envs[name] = e; cmds[name] = spec["argv"]
        else:
            envs[name] = env
    for name, argv in cmds.items():  # warm up
        for _ in range(5):
            w, c, rc = run(argv, cwd, envs[name])
            if rc != 0:
                print(f"{name}: exit {rc}", file=sys.stderr)
    for _ in range(rounds):
        order = list(cmds); random.shuffle(order)
        for name in order:
            w, c, rc = run(cmds[name], cwd, envs[name])
            res[name][0].append(w); res[name][1].append(c)
    base = {k: (statistics.median(v[0]), statistics.median(v[1])) for k, v in res.items()}
    ref, plain = base.get("bwrap"), base.get("plain")
    print(f"| command | wall ms | CPU ms | wall / bwrap | CPU / bwrap | wall / plain | CPU / plain |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for k, (w, c) in base.items():
        r = f"{w/ref[0]:.2f} | {c/ref[1]:.2f}" if ref else "- | -"
        p = f"{w/plain[0]:.2f} | {c/plain[1]:.2f}" if plain and plain[1] > 0 else "- | -"
        print(f"| {k} | {w*1e3:.2f} | {c*1e3:.2f} | {r} | {p} |")
main()
