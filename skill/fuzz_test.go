package skill

import "testing"

func FuzzParse(f *testing.F) {
	f.Add([]byte("---\nname: x\ndescription: d\npermissions:\n  fs:\n    read: ['$WORK_DIR/**']\n  network:\n    allow: ['*:443']\n  exec: [sh]\n  limits: {memory: 256Mi, pids: 4, timeout: 5s}\n---\nbody\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\na: &x [*x]\n---\n"))
	f.Add([]byte("\xef\xbb\xbf---\r\nname: x\r\n---\r\n"))
	f.Add([]byte("---\nname: x--y\ndescription: ' '\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The folder is x, so only a skill named x can load.
		s, err := Parse("skills/x/SKILL.md", data)
		if err != nil {
			return
		}
		if s.Name != "x" || s.Description == "" {
			t.Fatalf("a skill breaking the Agent Skills format was accepted: name %q, description %q", s.Name, s.Description)
		}
	})
}
