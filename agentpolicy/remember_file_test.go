package agentpolicy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// rememberOne remembers line into file, failing the test on an error.
func rememberOne(t *testing.T, file, line string) {
	t.Helper()
	if _, err := Remember(file, line); err != nil {
		t.Fatalf("Remember(%s, %q): %v", filepath.Base(file), line, err)
	}
}

// jsonObject decodes a JSON object, failing the test when data is not one.
func jsonObject(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON any more: %v\n%s", err, data)
	}
	return v
}

// TestRememberJSONStaysJSON guards a fixed bug: remember re-encoded every
// file as YAML, so a JSON policy got `allow: [{command: npm run}]`
// appended in YAML flow style, and no JSON reader could read it again.
// Now the file is JSON afterwards, holds what it held (keys in their
// order, numbers and strings as they were) and the new rule.
func TestRememberJSONStaysJSON(t *testing.T) {
	const src = `{"version": 1, "url": {"default": "allow", "deny": ["https://a.example/<x>&y"]},
 "permissions": {"deny": [{"command": "rm"}]}, "caps": {"limits": {"pids": 64, "memory": "1Gi"}}}`
	for _, name := range []string{"p.json", "p.yaml"} { // the text decides, not the name
		t.Run(name, func(t *testing.T) {
			file := writeFile(t, t.TempDir(), name, src)
			rememberOne(t, file, "make build")
			data, _ := os.ReadFile(file)
			got := jsonObject(t, data)
			want := jsonObject(t, []byte(src))
			want["permissions"].(map[string]any)["allow"] = []any{map[string]any{"command_glob": "make build"}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("file holds\n%s\nwant %v", data, want)
			}
			// Key order is kept: version, url, permissions, caps.
			text := string(data)
			if i, j, k := strings.Index(text, `"url"`), strings.Index(text, `"permissions"`), strings.Index(text, `"caps"`); !(0 < i && i < j && j < k) {
				t.Errorf("keys reordered:\n%s", data)
			}
			if !strings.Contains(text, `<x>&y`) {
				t.Errorf("string re-escaped:\n%s", data)
			}
			// Remembering again keeps it JSON and adds nothing.
			rememberOne(t, file, "make build")
			again, _ := os.ReadFile(file)
			if string(again) != string(data) {
				t.Errorf("again: changed to\n%s", again)
			}
			rememberOne(t, file, "npm test")
			jsonObject(t, mustRead(t, file))
		})
	}
}

// TestRememberNewFileFormat: a missing or blank *.json file is written as
// JSON, anything else as YAML; a YAML file with JSON-like flow style or
// comments stays YAML.
func TestRememberNewFileFormat(t *testing.T) {
	for _, tt := range []struct {
		name, content string // content "-" for a missing file
		json          bool
	}{
		{"new.json", "-", true},
		{"new.yaml", "-", false},
		{"new", "-", false},
		{"blank.json", "\n", true},
		{"blank.yaml", "", false},
		{"flow.yaml", "{version: 1}\n", false},
		{"comment.json", "# a YAML comment\n", false},
		{"yaml.json", "version: 1\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, tt.name)
			if tt.content != "-" {
				writeFile(t, dir, tt.name, tt.content)
			}
			rememberOne(t, file, "make build")
			data := mustRead(t, file)
			isJSON := json.Valid(data)
			if isJSON != tt.json {
				t.Errorf("JSON %v, want %v:\n%s", isJSON, tt.json, data)
			}
			p, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Permissions.Allow) != 1 {
				t.Errorf("allow %+v", p.Permissions.Allow)
			}
			if tt.content == "-" && p.Version != 1 {
				t.Errorf("a new file has version %d", p.Version)
			}
			if tt.json && strings.Contains(tt.name, "comment") {
				t.Errorf("comments lost")
			}
		})
	}
}

// TestRememberStringsStayStrings guards a fixed bug: a remembered command
// that YAML reads as another type ("true", "1", "null") was written as a
// plain scalar, and the file no longer parsed (a bool is no command).
func TestRememberStringsStayStrings(t *testing.T) {
	for _, line := range []string{"true", "1", "null", "yes"} {
		file := filepath.Join(t.TempDir(), "p.yaml")
		if _, err := Remember(file, line); err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		if _, err := Load(file); err != nil {
			t.Errorf("%q: the file no longer parses: %v", line, err)
		}
	}
}

// TestRememberAtomicAndSafe: the file is replaced whole, keeps its mode,
// leaves no temporary file, and a symbolic link is refused, leaving both
// the link and the file it names as they were.
func TestRememberAtomicAndSafe(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "p.yaml", "version: 1\n")
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(file)
	rememberOne(t, file, "make build")
	after, _ := os.Stat(file)
	if after.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", after.Mode().Perm())
	}
	if os.SameFile(before, after) {
		t.Errorf("the file was written in place, not replaced")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left beside the file: %v", entries)
	}

	other := writeFile(t, dir, "other.yaml", "version: 1\n")
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	_, err := Remember(link, "make build")
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("through a link: %v, want a refusal naming the link", err)
	}
	if data := mustRead(t, other); string(data) != "version: 1\n" {
		t.Errorf("the link's target was changed:\n%s", data)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	// A dangling link is refused too, rather than create its target.
	dangling := filepath.Join(dir, "dangling.yaml")
	os.Symlink(filepath.Join(dir, "nowhere.yaml"), dangling)
	if _, err := Remember(dangling, "make build"); err == nil {
		t.Errorf("a dangling link was written through")
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere.yaml")); err == nil {
		t.Errorf("a dangling link's target was created")
	}
	if _, err := Remember(dir, "make build"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a folder: %v", err)
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
