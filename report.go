package corral

import (
	"encoding/json"
	"math"
	"time"

	"corral.dev/corral/sandbox"
)

// ReportVersion is the schema_version of a Result's JSON, the report
// (docs/report.md). It changes when a key is removed or renamed, or its
// type or meaning changes; a new key keeps it, so readers must ignore keys
// they do not know.
const ReportVersion = 1

// Stage is where a run ended (Result.Stage): the step that stopped it,
// or StageCommand once the command started.
type Stage = sandbox.Stage

// The stages, in the order a run goes through them. Run itself ends in
// one from StagePolicy on; the corral command adds StageFlags and
// StageSkills, which happen before it calls Run.
const (
	// StageFlags: the command line (a bad flag, no command, an output
	// file or descriptor corral refuses).
	StageFlags Stage = "flags"
	// StageSkills: loading the skills (LoadSkills).
	StageSkills Stage = "skills"
	// StagePolicy: loading the agent policy and capping the skills.
	StagePolicy Stage = "policy"
	// StagePreflight: the work dir, and the command checked against the
	// exec lists and the agent policy (a refusal is exit 126).
	StagePreflight Stage = "preflight"
	// StagePlan: the limits, the write roots, probing the host and
	// building the kernel plan (a missing program is exit 127; a
	// protection the host cannot give, 125).
	StagePlan Stage = sandbox.StagePlan
	// StageLaunch: the sandbox's init, namespaces or the landlock tier,
	// the cgroup, mounts, Landlock, seccomp and the command's execve.
	StageLaunch Stage = sandbox.StageLaunch
	// StageCommand: the command started. Its exit status, signal, the
	// timeout or the memory cap say how it ended.
	StageCommand Stage = sandbox.StageCommand
)

// Stages lists every Stage in order (the schema's enum).
var Stages = []Stage{StageFlags, StageSkills, StagePolicy, StagePreflight, StagePlan, StageLaunch, StageCommand}

// resultFields is Result without its methods, for encoding/json.
type resultFields Result

// MarshalJSON writes the report: schema_version first, every key always
// present (an empty list is [], never null), wall_ms last.
func (r Result) MarshalJSON() ([]byte, error) {
	orEmpty(&r.Argv)
	orEmpty(&r.Protections)
	orEmpty(&r.Dropped)
	orEmpty(&r.Denials)
	orEmpty(&r.ProxyDenials)
	orEmpty(&r.NetworkBudgets)
	orEmpty(&r.Warnings)
	orEmpty(&r.Created)
	orEmpty(&r.Removed)
	orEmpty(&r.Quarantined)
	orEmpty(&r.Reset)
	orEmpty(&r.Replaced)
	orEmpty(&r.Asked)
	orEmpty(&r.FSDenials)
	orEmpty(&r.DenialsUnobservable)
	return json.Marshal(struct {
		SchemaVersion int `json:"schema_version"`
		resultFields
		WallMS float64 `json:"wall_ms"`
	}{ReportVersion, resultFields(r), float64(r.Wall.Microseconds()) / 1000})
}

// UnmarshalJSON reads a report back (wall_ms into Wall, to the
// microsecond); schema_version is not checked.
func (r *Result) UnmarshalJSON(data []byte) error {
	v := struct {
		*resultFields
		WallMS float64 `json:"wall_ms"`
	}{resultFields: (*resultFields)(r)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	r.Wall = time.Duration(math.Round(v.WallMS*1000)) * time.Microsecond
	return nil
}

// orEmpty makes a nil list an empty one.
func orEmpty[T any](s *[]T) {
	if *s == nil {
		*s = []T{}
	}
}
