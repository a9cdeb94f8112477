package skill

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"corral.dev/corral/policyengine"
)

// ParseSize reads a memory size as Docker and systemd write them: a
// number of bytes, or a number with a unit K, M, G or T in either case,
// optionally followed by "i", "B" or "iB" (512m, 512M, 512MiB, 1.5g,
// 2GB). Every unit is a power of 1024, as in Docker and systemd (unlike
// Kubernetes, where M is 10^6). The size is at least 1Mi.
func ParseSize(s string) (int64, error) {
	n, err := ParseBytes(s)
	if err == nil && n < 1<<20 {
		return 0, fmt.Errorf("size %q is below the minimum of 1Mi", s)
	}
	return n, err
}

// ParseBytes reads a positive size as ParseSize does, with no minimum.
// A fraction is allowed with a unit (1.5g) and rounds down to a byte.
func ParseBytes(s string) (int64, error) {
	bad := fmt.Errorf("%q is not a size (use bytes or a unit, as Docker does: 512m, 256Mi, 1.5G)", s)
	t := strings.ToLower(strings.TrimSpace(s))
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], t[i:]
	}
	shift, ok := map[string]uint{"": 0, "b": 0, "k": 10, "m": 20, "g": 30, "t": 40}[strings.TrimSuffix(strings.TrimSuffix(unit, "b"), "i")]
	if !ok || num == "" || unit == "i" || unit == "ib" || strings.HasSuffix(unit, "bi") {
		return 0, bad
	}
	whole, frac, hasFrac := strings.Cut(num, ".")
	if whole == "" || hasFrac && (frac == "" || shift == 0 || strings.Contains(frac, ".")) {
		return 0, bad
	}
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		return 0, bad
	}
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	n <<= shift
	if hasFrac {
		f, err := strconv.ParseFloat("0."+frac, 64)
		if err != nil {
			return 0, bad
		}
		n += int64(f * float64(int64(1)<<shift))
	}
	if n <= 0 {
		return 0, fmt.Errorf("size %q must be greater than zero", s)
	}
	return n, nil
}

// ParseDuration reads a positive duration: bare seconds as timeout(1)
// and Docker take them (90, 1.5), or Go's notation (90s, 5m, 1h30m).
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t != "" && strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }) < 0 {
		t += "s"
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (use seconds or a unit: 90, 30s, 5m, 1h)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("duration %q must be greater than zero", s)
	}
	return d, nil
}

// checkProgram accepts a program name looked up on PATH or an absolute path.
func checkProgram(v, what string) error {
	switch {
	case v == "":
		return fmt.Errorf("empty %s name", what)
	case strings.ContainsAny(v, " \t\n\x00*?[]$`'\"\\;|&<>()"):
		return fmt.Errorf("%q is not a %s name: give a name looked up on PATH (curl) or an absolute path (/usr/bin/curl)", v, what)
	case strings.Contains(v, "/") && !strings.HasPrefix(v, "/"):
		return fmt.Errorf("%q is a relative path: give a name looked up on PATH or an absolute path", v)
	case strings.HasPrefix(v, "/") && strings.Contains("/"+v+"/", "/../"):
		return fmt.Errorf("%q contains '..'", v)
	}
	return nil
}

// Variables holds the values of the path variables skills may use.
type Variables struct {
	WorkDir string // $WORK_DIR
	DataDir string // parent of each skill's $DATA_DIR (DataDir/<skill name>)
	Home    string // $HOME
	TmpDir  string // $TMPDIR
}

// variableNames are the variables a path may use.
var variableNames = []string{"SKILL_DIR", "WORK_DIR", "DATA_DIR", "HOME", "TMPDIR"}

// expand replaces $NAME and ${NAME} in s with vals, and a leading "~" with
// $HOME. An unknown variable, a stray '$' or a result that is not an
// absolute path is an error.
func expand(s string, vals map[string]string) (string, error) {
	if s == "~" || strings.HasPrefix(s, "~/") {
		s = "$HOME" + s[1:]
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		rest := s[i+1:]
		var name string
		if strings.HasPrefix(rest, "{") {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return "", fmt.Errorf("%q has an unclosed ${", s)
			}
			name = rest[1:end]
			i += end + 1
		} else {
			n := 0
			for n < len(rest) && (rest[n] == '_' || rest[n] >= 'A' && rest[n] <= 'Z' || rest[n] >= 'a' && rest[n] <= 'z' || n > 0 && rest[n] >= '0' && rest[n] <= '9') {
				n++
			}
			name = rest[:n]
			i += n
		}
		v, ok := vals[name]
		if !ok {
			if name == "" {
				return "", fmt.Errorf("%q has a '$' that starts no variable", s)
			}
			return "", fmt.Errorf("unknown variable $%s in %q (known: $%s)", name, s, strings.Join(variableNames, ", $"))
		}
		b.WriteString(v)
	}
	out := b.String()
	if !strings.HasPrefix(out, "/") {
		return "", fmt.Errorf("%q is not an absolute path: start it with / or a variable such as $WORK_DIR", s)
	}
	return out, nil
}

// checkPathGlob validates a path glob as written: its variables are known
// and, with placeholder values, it compiles.
func checkPathGlob(v string) error {
	vals := map[string]string{}
	for _, name := range variableNames {
		vals[name] = "/" + strings.ToLower(name)
	}
	p, err := expand(v, vals)
	if err != nil {
		return err
	}
	_, err = policyengine.CompileGlob(p)
	return err
}

// DenyAnywhere is how a deny glob that names no folder starts: "**/.env"
// is any .env, and is read as "/**/.env".
const DenyAnywhere = "**/"

// denyPath makes a deny glob written as "**/NAME" absolute; every other
// deny glob is a path glob like those of fs.read.
func denyPath(v string) string {
	if strings.HasPrefix(v, DenyAnywhere) {
		return "/" + v
	}
	return v
}

// checkDenyGlob validates an fs.deny glob as written.
func checkDenyGlob(v string) error {
	if v == "**" || v == "/**" {
		return fmt.Errorf("%q denies every path; remove the grants instead", v)
	}
	return checkPathGlob(denyPath(v))
}

// ExpandPath expands the variables of a path written outside a skill (an
// agent policy's caps): $WORK_DIR, $HOME, $TMPDIR, $DATA_DIR (the parent of
// every skill's data folder) and a leading "~".
func ExpandPath(s string, v Variables) (string, error) {
	return expand(s, map[string]string{"WORK_DIR": v.WorkDir, "HOME": v.Home, "TMPDIR": v.TmpDir, "DATA_DIR": v.DataDir})
}
