package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	corral "corral.dev/corral"
	"corral.dev/corral/printable"
	"corral.dev/corral/sandbox"
	"corral.dev/corral/sandbox/cgroup"
	"corral.dev/corral/sandbox/fsaudit"
)

var doctorCommand = command{
	name:    "doctor",
	usage:   "",
	summary: "Show which kernel features this host has and what exec would enforce.",
	setup: func(fs *flag.FlagSet) func([]string) error {
		var sf skillFlags
		sf.register(fs)
		asJSON := fs.Bool("json", false, "print JSON")
		return func([]string) error {
			l, err := sf.load()
			if err != nil {
				return failed(err)
			}
			spec := sandbox.Spec{WorkDir: l.Vars.WorkDir, BestEffort: true}
			facts := sandbox.Probe(l.Perms, spec)
			if facts.UserNSErr == "" {
				// The sysctls allow them; a container's seccomp profile
				// or an LSM may still refuse.
				if err := sandbox.TryUserNS(); err != nil {
					facts.UserNSErr = "the kernel refused a user namespace: " + strings.TrimSpace(err.Error())
				}
			}
			plan, err := sandbox.BuildPlan(l.Perms, spec, facts)
			if err != nil {
				return failed(err)
			}
			limits := sandbox.ResolveLimits(l.Perms.Limits, sandbox.LimitFlags{})
			cg, cgErr := cgroup.Probe(limits.Memory, limits.Pids)
			plan.Protections = append(plan.Protections, sandbox.LimitsProtection(limits, cg, cgErr))
			start := time.Now()
			idx := sandbox.HostProgramIndex()
			took := time.Since(start)
			if *asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"facts": kernelFacts(facts), "tier": plan.Tier, "protections": plan.Protections, "program_index": idx,
					"file_denials": fileDenials(facts.LandlockABI), "unfinished_runs": unfinishedRuns()})
			}
			fmt.Printf("host: uid %d, Landlock ABI %d, seccomp %v\n", facts.Uid, facts.LandlockABI, facts.Seccomp)
			if facts.UserNSErr != "" {
				fmt.Printf("user namespaces: refused: %s\n", facts.UserNSErr)
				if strings.Contains(facts.UserNSErr, "apparmor_restrict_unprivileged_userns") {
					fmt.Printf("  to allow them for corral: sudo corral setup apparmor (a profile whose one rule is userns)\n")
				}
			} else {
				fmt.Printf("user namespaces: allowed\n")
			}
			fmt.Printf("program index (exec allowlists bind these noexec): %d folders holding programs, ", len(idx.Folders))
			switch {
			case idx.Source != "walked":
				fmt.Printf("read from %s\n", idx.Source)
			case idx.Saved != "":
				fmt.Printf("walked in %d ms, saved to %s\n", took.Milliseconds(), idx.Saved)
			default:
				fmt.Printf("walked in %d ms, not saved (this user can write neither /run/corral nor $XDG_RUNTIME_DIR/corral): every exec with an exec allowlist walks again until root runs corral doctor\n", took.Milliseconds())
			}
			fmt.Printf("file denials: %s\n", fileDenials(facts.LandlockABI))
			printUnfinished()
			fmt.Printf("tier: %s", plan.Tier.Name)
			if plan.Tier.Name == sandbox.TierLandlock {
				fmt.Printf(" (no namespaces: Landlock, seccomp and corral's connect supervisor enforce the permissions on the host's own namespaces; README's protection table has a column for it)")
			}
			fmt.Printf("\n\nwhat exec would enforce:\n")
			for _, p := range plan.Protections {
				mark := "yes"
				if !p.Enforced {
					mark = "NO "
				}
				fmt.Printf("  [%s] %-15s %s\n", mark, p.Name, p.Detail)
			}
			strict := spec
			strict.BestEffort = false
			if _, err := sandbox.BuildPlan(l.Perms, strict, facts); err != nil {
				fmt.Printf("\nexec refuses to run here unless --best-effort is given: %v\n", err)
			} else {
				fmt.Printf("\nexec runs with every required protection.\n")
			}
			return nil
		}
	},
}

func kernelFacts(f *sandbox.Facts) map[string]any {
	return map[string]any{"uid": f.Uid, "landlock_abi": f.LandlockABI, "landlock_error": f.LandlockErr,
		"userns_error": f.UserNSErr, "seccomp": f.Seccomp}
}

// fileDenials says whether exec's report can list what Landlock refuses
// the command (docs/denials.md).
func fileDenials(abi int) string {
	if err := fsaudit.Observable(abi); err != nil {
		return "the report lists the preflight's refusals only: " + strings.TrimPrefix(err.Error(), fsaudit.ErrUnobservable.Error()+": ")
	}
	return "the report lists what Landlock refuses the command (the kernel's audit records)"
}

// unfinishedRuns is doctor's JSON of the runs whose cleanup is not done.
func unfinishedRuns() map[string]any {
	runs, dir, err := corral.UnfinishedRuns()
	out := map[string]any{"folder": dir, "runs": runs}
	if err != nil {
		out["error"] = err.Error()
	}
	if runs == nil {
		out["runs"] = []corral.UnfinishedRun{}
	}
	return out
}

// printUnfinished says where corral records each run's cleanup, and which
// runs' cleanup is not done: a corral killed before its end leaves it to
// the next corral exec.
func printUnfinished() {
	runs, dir, err := corral.UnfinishedRuns()
	if err != nil {
		fmt.Printf("cleanup records: cannot be kept in %s (%v): exec refuses to run unless --best-effort\n", dir, err)
		return
	}
	waiting := 0
	for _, r := range runs {
		if !r.Running {
			waiting++
		}
	}
	fmt.Printf("cleanup records (for a corral killed before its end): %s, %d running, %d left by a killed corral\n", dir, len(runs)-waiting, waiting)
	for _, r := range runs {
		if r.Running {
			continue
		}
		fmt.Printf("  unfinished: corral pid %d, started %s in %s: the next corral exec finishes its cleanup (%s)\n",
			r.Pid, r.Started.Format(time.RFC3339), printable.String(r.WorkDir), r.Record)
	}
}
