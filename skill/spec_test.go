package skill

import (
	"maps"
	"strings"
	"testing"
)

// TestFormatAccepts loads skills that keep every rule of the Agent Skills
// format, at the edges of its limits.
func TestFormatAccepts(t *testing.T) {
	long := strings.Repeat("a", 64)
	tests := []struct{ name, folder, text string }{
		{"digits and hyphens", "pdf-processing2", "---\nname: pdf-processing2\ndescription: d\n---\n"},
		{"a leading digit", "2fa", "---\nname: 2fa\ndescription: d\n---\n"},
		{"64 characters", long, "---\nname: " + long + "\ndescription: d\n---\n"},
		{"description of 1024 characters", "x", "---\nname: x\ndescription: " + strings.Repeat("d", 1024) + "\n---\n"},
		// Characters, not bytes: 1024 two-byte letters.
		{"description of 1024 two-byte characters", "x", "---\nname: x\ndescription: " + strings.Repeat("é", 1024) + "\n---\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Load(writeSkillIn(t, tt.folder, tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != tt.folder {
				t.Errorf("name = %q", s.Name)
			}
		})
	}
}

// TestFormatOptionalFields loads the format's optional fields as written.
func TestFormatOptionalFields(t *testing.T) {
	compat := strings.Repeat("c", 500)
	s, err := Load(writeSkill(t, "---\nname: x\ndescription: d\nlicense: Proprietary. LICENSE.txt has complete terms\ncompatibility: "+compat+"\nmetadata:\n  author: example-org\n  version: \"1.0\"\n  empty: ''\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.License != "Proprietary. LICENSE.txt has complete terms" || s.Compatibility != compat {
		t.Errorf("license %q, compatibility %q", s.License, s.Compatibility)
	}
	want := map[string]string{"author": "example-org", "version": "1.0", "empty": ""}
	if !maps.Equal(s.Metadata, want) {
		t.Errorf("metadata = %v, want %v", s.Metadata, want)
	}
	s, err = Load(writeSkill(t, "---\nname: x\ndescription: d\nmetadata:\n---\n"))
	if err != nil || s.Metadata != nil || s.License != "" {
		t.Errorf("empty metadata: %v, %+v", err, s)
	}
}

// TestFormatRules breaks each rule of the format once: the error is one
// line naming the file, the field and the rule.
func TestFormatRules(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name, folder, text string
		want               string
	}{
		{"name of 65 characters", long, "---\nname: " + long + "\ndescription: d\n---\n", ":2: name: \"" + long + "\" breaks the Agent Skills name rule: 1-64 characters"},
		{"empty name", "x", "---\nname: ''\ndescription: d\n---\n", ":2: name: \"\" breaks the Agent Skills name rule: 1-64 characters"},
		{"upper case", "Pdf", "---\nname: Pdf\ndescription: d\n---\n", "name: \"Pdf\" breaks the Agent Skills name rule: only lower-case letters a-z, digits and '-'"},
		{"underscore", "a_b", "---\nname: a_b\ndescription: d\n---\n", "only lower-case letters a-z, digits and '-'"},
		{"dot", "a.b", "---\nname: a.b\ndescription: d\n---\n", "only lower-case letters a-z, digits and '-'"},
		{"non-ASCII letter", "café", "---\nname: café\ndescription: d\n---\n", "only lower-case letters a-z, digits and '-'"},
		{"leading hyphen", "-pdf", "---\nname: -pdf\ndescription: d\n---\n", "name: \"-pdf\" breaks the Agent Skills name rule: no '-' at the start or the end"},
		{"trailing hyphen", "pdf-", "---\nname: pdf-\ndescription: d\n---\n", "no '-' at the start or the end"},
		{"double hyphen", "pdf--x", "---\nname: pdf--x\ndescription: d\n---\n", "name: \"pdf--x\" breaks the Agent Skills name rule: no '--'"},
		{"name not a string", "x", "---\nname: 12\ndescription: d\n---\n", "name: must be a string"},
		{"folder mismatch", "other", "---\nname: x\ndescription: d\n---\n", ":2: name: \"x\" breaks the Agent Skills name rule: it must match the name of the folder holding SKILL.md, \"other\""},
		{"missing description", "x", "---\nname: x\n---\n", "description: missing: the Agent Skills format requires a description"},
		{"empty description", "x", "---\nname: x\ndescription: ''\n---\n", ":3: description: is empty"},
		{"blank description", "x", "---\nname: x\ndescription: '  '\n---\n", "description: is empty"},
		{"description of 1025 characters", "x", "---\nname: x\ndescription: " + strings.Repeat("d", 1025) + "\n---\n", "description: has 1025 characters, more than the Agent Skills format's 1024"},
		{"empty compatibility", "x", "---\nname: x\ndescription: d\ncompatibility: ''\n---\n", ":4: compatibility: is empty"},
		{"compatibility of 501 characters", "x", "---\nname: x\ndescription: d\ncompatibility: " + strings.Repeat("c", 501) + "\n---\n", "compatibility: has 501 characters, more than the Agent Skills format's 500"},
		{"license a list", "x", "---\nname: x\ndescription: d\nlicense: [MIT]\n---\n", ":4: license: must be a string, not a list"},
		{"metadata a list", "x", "---\nname: x\ndescription: d\nmetadata: [a]\n---\n", "metadata: must be a mapping of string keys to string values"},
		{"metadata number", "x", "---\nname: x\ndescription: d\nmetadata:\n  version: 1.10\n---\n", `:5: metadata.version: must be a string, not float "1.10": quote it, as in version: "1.10"`},
		{"metadata boolean", "x", "---\nname: x\ndescription: d\nmetadata: {beta: true}\n---\n", `metadata.beta: must be a string, not bool "true"`},
		{"metadata null", "x", "---\nname: x\ndescription: d\nmetadata: {author: }\n---\n", "metadata.author: must be a string, not null"},
		{"metadata nested", "x", "---\nname: x\ndescription: d\nmetadata:\n  author: {name: a}\n---\n", "metadata.author: must be a string, not a mapping"},
		{"metadata list value", "x", "---\nname: x\ndescription: d\nmetadata:\n  tags: [a, b]\n---\n", "metadata.tags: must be a string, not a list"},
		{"metadata number key", "x", "---\nname: x\ndescription: d\nmetadata:\n  1: a\n---\n", `:5: metadata: keys must be strings, not int "1"`},
		{"metadata key twice", "x", "---\nname: x\ndescription: d\nmetadata:\n  a: b\n  a: c\n---\n", "metadata.a: defined twice"},
		{"unknown field", "x", "---\nname: x\ndescription: d\nversion: '1'\n---\n", ":4: version: unknown field (known fields here: allowed-tools, compatibility, description, license, metadata, name, permissions, requires)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeSkillIn(t, tt.folder, tt.text))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, "SKILL.md") || strings.Contains(msg, "\n") {
				t.Errorf("error %q is not one line naming the file and %q", msg, tt.want)
			}
		})
	}
}
