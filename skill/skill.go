package skill

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"corral.dev/corral/policyengine"
)

// FileName is the file that makes a folder a skill.
const FileName = "SKILL.md"

// Skill is one loaded skill.
type Skill struct {
	// The Agent Skills format's fields.
	Name          string
	Description   string
	License       string            // a license name or a bundled file's; "" when not given
	Compatibility string            // what the skill needs of its environment; "" when not given
	Metadata      map[string]string // the author's own keys; nil when not given
	AllowedTools  []Tool            // the tools the skill pre-approves, in order (tools.go)

	Dir         string // absolute folder holding SKILL.md ($SKILL_DIR)
	File        string // the SKILL.md that was read
	Requires    Requires
	Permissions *Permissions // nil when the frontmatter has no permissions key
	Body        string       // the text after the frontmatter, kept as is
}

// Requires lists what a skill expects the host to have.
type Requires struct {
	Bins []string `json:"bins,omitempty"`
}

// Permissions is one skill's permissions as written, path variables not yet
// expanded.
type Permissions struct {
	Read     []string
	Write    []string
	Deny     []string // fs.deny: globs carved out of Read and Write
	Network  []string
	Bind     []string // network.bind: TCP ports, or "*"
	Exec     []string
	Env      []string
	Services map[string]string // service name → access
	Limits   Limits
	Budget   policyengine.Budget // network.budget; From is filled in by Merge
}

// Limits as declared; zero means not set.
type Limits struct {
	Memory  int64
	Pids    int
	Timeout time.Duration
}

// Error is a problem with a skill file, located as precisely as possible.
type Error struct {
	File  string
	Line  int    // 0 when the problem is not on one line
	Field string // dotted path such as permissions.network.allow[1]
	Err   error
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %v", loc, e.Field, e.Err)
	}
	return fmt.Sprintf("%s: %v", loc, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads a skill from a folder (its SKILL.md) or from a SKILL.md path.
func Load(path string) (*Skill, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	info, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{File: path, Err: errors.New("no such skill folder or file")}
		}
		return nil, &Error{File: path, Err: err}
	}
	file := abs
	if info.IsDir() {
		file = filepath.Join(abs, FileName)
		info, err = os.Stat(file)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{File: path, Err: fmt.Errorf("not a skill: the folder has no %s", FileName)}
		}
		if err != nil {
			return nil, &Error{File: file, Err: err}
		}
	}
	if !info.Mode().IsRegular() {
		return nil, &Error{File: file, Err: errors.New("not a regular file")}
	}
	data, err := readLimited(file, maxFileSize)
	if err != nil {
		return nil, &Error{File: file, Err: err}
	}
	return Parse(file, data)
}

// Parse decodes the SKILL.md text data read from file. The folder holding
// file must be named after the skill, as the Agent Skills format requires.
func Parse(file string, data []byte) (*Skill, error) {
	yamlText, body, err := splitFrontmatter(data)
	if err != nil {
		return nil, &Error{File: file, Err: err}
	}
	s := &Skill{File: file, Dir: filepath.Dir(file), Body: string(body)}
	// The YAML starts on line 2 of the file.
	if err := decodeFrontmatter(s, yamlText, file, 1); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadAll loads every skill and refuses two skills with one name.
func LoadAll(paths []string) ([]*Skill, error) {
	seen := map[string]*Skill{}
	var out []*Skill
	for _, p := range paths {
		s, err := Load(p)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[s.Name]; ok {
			if prev.File == s.File {
				continue // the same skill named twice is harmless
			}
			return nil, fmt.Errorf("two skills are named %q: %s and %s", s.Name, prev.File, s.File)
		}
		seen[s.Name] = s
		out = append(out, s)
	}
	return out, nil
}

func readLimited(file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("file is larger than the limit of %d bytes", limit)
	}
	return data, nil
}
