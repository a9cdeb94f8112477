package skill

import "testing"

func FuzzParse(f *testing.F) {
	f.Add([]byte("---\nname: x\ndescription: d\npermissions:\n  fs:\n    read: ['$WORK_DIR/**']\n  network:\n    allow: ['*:443']\n  exec: [sh]\n  limits: {memory: 256Mi, pids: 4, timeout: 5s}\n---\nbody\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\na: &x [*x]\n---\n"))
	f.Add([]byte("\xef\xbb\xbf---\r\nname: x\r\n---\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("SKILL.md", data)
		if err == nil && s.Name == "" {
			t.Fatal("a skill without a name was accepted")
		}
	})
}
