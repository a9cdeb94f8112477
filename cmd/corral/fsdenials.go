package main

import (
	"fmt"
	"strings"

	"corral.dev/corral"
	"corral.dev/corral/printable"
)

// The stderr summary of file denials stays short whatever the command
// does: at most this many lines, each at most this long (the report has
// up to 1000 entries).
const (
	summaryLines   = 20
	summaryLineMax = 300
)

// fsDenialSummary says which file accesses the sandbox refused and what
// would grant each, after the run ("" when none). The preflight's own
// refusals are left out: the line saying why the run stopped names them.
// Paths and programs are the command's choice: quoted where they hold
// anything a terminal would act on.
func fsDenialSummary(r *corral.Result) string {
	var lines []string
	for _, d := range r.FSDenials {
		if d.Source == "preflight" {
			continue
		}
		who := ""
		if d.Program != "" {
			who = " (" + printable.String(d.Program) + ")"
		}
		line := fmt.Sprintf("  %s %s%s: %s", d.Access, printable.String(d.Path), who, printable.Line(d.Grant))
		if len(line) > summaryLineMax {
			line = line[:summaryLineMax-3] + "..."
		}
		lines = append(lines, line)
	}
	total := len(lines) + r.FSDenialsMore
	if total == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "corral: the sandbox refused %d file access(es) beyond the grants:\n", total)
	for _, l := range lines[:min(len(lines), summaryLines)] {
		b.WriteString(l + "\n")
	}
	if total > summaryLines {
		fmt.Fprintf(&b, "  ... and %d more (the report, --report, lists up to 1000)\n", total-summaryLines)
	}
	if r.FSDenialsLost {
		b.WriteString("  (some denials were lost on their way from the kernel)\n")
	}
	return b.String()
}
