package corral_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"corral.dev/corral"
	"corral.dev/corral/internal/jsonschema"
	"corral.dev/corral/netns"
	"corral.dev/corral/policyengine"
	"corral.dev/corral/sandbox"
)

// reportSchema is docs/report.schema.json, strict: every key a Result
// writes must be documented there.
func reportSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("docs", "report.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jsonschema.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	s.Strict = true
	return s
}

// validReport fails t unless data conforms to the schema and holds no
// null but tier, limits and the output counts (null: not counted).
func validReport(t *testing.T, s *jsonschema.Schema, data []byte) {
	t.Helper()
	for _, p := range s.Validate(data) {
		t.Errorf("report: %s\n%s", p, data)
	}
	var top map[string]any
	json.Unmarshal(data, &top)
	for k, v := range top {
		if v == nil && k != "tier" && k != "limits" && k != "stdout_bytes" && k != "stderr_bytes" {
			t.Errorf("report: %s is null\n%s", k, data)
		}
	}
	ws, _ := top["warnings"].([]any)
	for i, w := range ws {
		if slices.Contains(ws[:i], w) {
			t.Errorf("report: warning %q twice", w)
		}
	}
}

// fullResult has every field set, each list with an element.
func fullResult() corral.Result {
	now := time.Date(2025, 1, 2, 3, 4, 5, 600000000, time.UTC)
	return corral.Result{
		Argv: []string{"sh", "-c", "true"}, Stage: corral.StageCommand, Error: "",
		Tier: &sandbox.TierInfo{Name: sandbox.TierLandlock, Why: "no user namespaces"}, ExitCode: 137, Signal: 9,
		Wall: 1234567 * time.Microsecond, PeakMemory: 1 << 20, OOMKilled: true, TimedOut: false,
		Limits:      &sandbox.Limits{Memory: 1 << 29, MemoryFrom: "default", Pids: 1024, PidsFrom: "default", Timeout: time.Second, TimeoutFrom: "--timeout", KillGrace: 2 * time.Second},
		Cgroup:      "/corral/run-1",
		Protections: []sandbox.Protection{{Name: "seccomp", Enforced: true, Detail: "rules"}},
		Dropped:     []string{"limits"},
		Denials:     []corral.Denial{{Time: now, Agent: "a1", Permission: "exec", Context: "curl x", Decision: policyengine.Decision{Action: policyengine.Deny, Reason: "no", Rule: "r", Layer: "project"}}},
		ProxyDenials: []netns.Event{{Time: now, Agent: "a1", Permission: "network", Method: "CONNECT", Host: "x.test", Port: 443, URL: "http://x.test/",
			Decision: "deny", Status: 403, Rule: "r", Layer: "l", Reason: "not allowed"}},
		ProxyDenialsMore: 2, Warnings: []string{"w"}, Created: []string{"/c"}, Removed: []string{"/r"},
		Quarantined: []corral.Quarantined{{Path: "/q", To: "/q.corral-quarantined-x", Why: "hook"}}, Replaced: []string{"/p"},
		FSDenials: []corral.FSDenial{{Path: "/etc/shadow", Access: "read", Rights: []string{"fs.read_file"}, Program: "cat", Exe: "/usr/bin/cat",
			Grant: `add "/etc/shadow" to permissions.fs.read`, Source: "landlock"}},
		FSDenialsMore: 1, FSDenialsLost: true,
		DenialsUnobservable: []sandbox.Unobservable{{Kind: sandbox.UnseenAbsent, Reason: "r"}},
	}
}

// TestReportSchemaMatchesResult: the schema's keys are exactly the ones a
// Result writes, all required; its stage enum is corral.Stages and its
// schema_version corral.ReportVersion.
func TestReportSchemaMatchesResult(t *testing.T) {
	s := reportSchema(t)
	data, err := json.Marshal(corral.Result{})
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if props := s.Properties(); !slices.Equal(keys, props) {
		t.Errorf("a Result writes %v, the schema documents %v", keys, props)
	}
	var raw struct {
		Required   []string `json:"required"`
		Properties struct {
			Version struct {
				Const int `json:"const"`
			} `json:"schema_version"`
		} `json:"properties"`
	}
	b, _ := os.ReadFile(filepath.Join("docs", "report.schema.json"))
	json.Unmarshal(b, &raw)
	sort.Strings(raw.Required)
	if !slices.Equal(raw.Required, keys) {
		t.Errorf("the schema requires %v, want every key: %v", raw.Required, keys)
	}
	if raw.Properties.Version.Const != corral.ReportVersion || top["schema_version"] != float64(corral.ReportVersion) {
		t.Errorf("schema_version: schema %d, Result %v, want %d", raw.Properties.Version.Const, top["schema_version"], corral.ReportVersion)
	}
	var enum []string
	for _, e := range s.Enum("stage") {
		enum = append(enum, e.(string))
	}
	var stages []string
	for _, st := range corral.Stages {
		stages = append(stages, string(st))
	}
	if !slices.Equal(enum, stages) {
		t.Errorf("the schema's stages %v, corral.Stages %v", enum, stages)
	}
}

// TestResultJSON: an empty Result and a full one both conform (no null
// list), and a report read back marshals to the same bytes.
func TestResultJSON(t *testing.T) {
	s := reportSchema(t)
	for _, r := range []corral.Result{{Stage: corral.StageFlags}, fullResult()} {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		validReport(t, s, data)
		ptr, _ := json.Marshal(&r)
		if !bytes.Equal(ptr, data) {
			t.Errorf("a *Result marshals differently:\n%s\n%s", ptr, data)
		}
		var back corral.Result
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(back)
		if !bytes.Equal(again, data) {
			t.Errorf("read back and written again:\n%s\nwant\n%s", again, data)
		}
	}
	data, _ := json.Marshal(fullResult())
	if !strings.HasPrefix(string(data), `{"schema_version":1,"argv":`) || !strings.Contains(string(data), `"wall_ms":1234.567}`) {
		t.Errorf("schema_version must come first and wall_ms be in milliseconds: %s", data)
	}
}

// TestRunResultRefused: a run the preflight refuses returns a Result
// that says where (preflight), with the exit status and the error of the
// *Error, and conforms to the schema; so does a Spec without skills.
func TestRunResultRefused(t *testing.T) {
	s := reportSchema(t)
	dir := t.TempDir()
	skill := filepath.Join(dir, "sk")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: sk\ndescription: t\npermissions:\n  exec: [sh]\n---\n"), 0o644)
	skills, err := corral.LoadSkills([]string{skill}, corral.Dirs{WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	res, err := corral.Run(context.Background(), corral.Spec{Skills: skills, Argv: []string{"curl", "http://x.test/"}})
	var ce *corral.Error
	if !errors.As(err, &ce) || ce.Code != corral.ExitNotAllowed {
		t.Fatalf("want a 126 *Error, got %v", err)
	}
	if res.Stage != corral.StagePreflight || res.ExitCode != corral.ExitNotAllowed || res.Error != ce.Err.Error() || !slices.Equal(res.Argv, []string{"curl", "http://x.test/"}) || len(res.Denials) != 1 {
		t.Errorf("Result %+v, want stage preflight, exit 126, the error, the argv and one denial", res)
	}
	data, _ := json.Marshal(res)
	validReport(t, s, data)

	res, err = corral.Run(context.Background(), corral.Spec{Argv: []string{"true"}})
	if !errors.As(err, &ce) || res.ExitCode != corral.ExitFailed || res.Stage != corral.StagePreflight || res.Error == "" {
		t.Errorf("no skills: %v, %+v; want a 125 at the preflight", err, res)
	}
	data, _ = json.Marshal(res)
	validReport(t, s, data)
}
