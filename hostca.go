package corral

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"corral.dev/corral/policyengine"
	"corral.dev/corral/skill"
)

// caFileVars name a file of CA certificates: a TLS-inspecting egress's
// root, which clients inside the sandbox need as much as outside.
// caDirVars name folders of them (SSL_CERT_DIR may list several).
var (
	caFileVars = []string{"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO"}
	caDirVars  = []string{"SSL_CERT_DIR"}
)

// caMax is the largest CA bundle file corral reads to check it.
const caMax = 16 << 20

// hostCAs are the permissions the host's CA bundle variables bring: the
// variable passes into the sandbox and its file (or folder) is readable.
// Only what holds certificates and no private key is granted: a variable
// that names anything else (a key, a home folder) grants nothing, and
// passes nothing.
// A path the system baseline reads already (/etc/ssl/certs) gets no grant
// of its own.
func hostCAs(getenv func(string) string, vars skill.Variables) policyengine.Permissions {
	var p policyengine.Permissions
	reads := map[string][]string{}
	from := func(k string) string { return "the host's $" + k + " (CA certificates)" }
	// A file the baseline reads anyway is not read to be checked (the
	// usual /etc/ssl/certs/ca-certificates.crt, often named by several
	// variables); another is read once however many name it.
	checked := map[string]bool{}
	isCert := func(f string) bool {
		if ok, seen := checked[f]; seen {
			return ok
		}
		ok := inBaseline(f) || certFile(f)
		checked[f] = ok
		return ok
	}
	for _, k := range caFileVars {
		f := getenv(k)
		if !filepath.IsAbs(f) {
			continue
		}
		if f = filepath.Clean(f); !isCert(f) {
			continue
		}
		p.Env = append(p.Env, policyengine.Entry{Value: k, From: []string{from(k)}})
		if !inBaseline(f) {
			reads[f] = append(reads[f], from(k))
		}
	}
	for _, k := range caDirVars {
		var dirs []string
		for _, d := range filepath.SplitList(getenv(k)) {
			if filepath.IsAbs(d) && (inBaseline(filepath.Clean(d)+"/x") || certDir(d, vars)) {
				dirs = append(dirs, filepath.Clean(d))
			}
		}
		if len(dirs) == 0 {
			continue
		}
		p.Env = append(p.Env, policyengine.Entry{Value: k, From: []string{from(k)}})
		for _, d := range dirs {
			if !inBaseline(d + "/x") {
				reads[d+"/**"] = append(reads[d+"/**"], from(k))
			}
		}
	}
	for v, f := range reads {
		p.Read = append(p.Read, policyengine.Entry{Value: v, From: f})
	}
	sort.Slice(p.Read, func(i, j int) bool { return p.Read[i].Value < p.Read[j].Value })
	return p
}

// inBaseline reports whether the system baseline reads p, outside /tmp
// (whose glob stands for the sandbox's own /tmp) and /proc.
func inBaseline(p string) bool {
	for _, g := range baselineGlobs() {
		if g.Match(p) {
			return true
		}
	}
	return false
}

var baselineGlobs = sync.OnceValue(func() []*policyengine.Glob {
	var out []*policyengine.Glob
	for _, s := range policyengine.SystemRead {
		if s == "/tmp/**" || s == "/proc/**" {
			continue
		}
		if g, err := policyengine.CompileGlob(s); err == nil {
			out = append(out, g)
		}
	}
	return out
})

// certFile reports whether f is a regular file of PEM certificates with
// no private key in it.
func certFile(f string) bool {
	st, err := os.Stat(f)
	if err != nil || !st.Mode().IsRegular() || st.Size() > caMax {
		return false
	}
	data, err := os.ReadFile(f)
	return err == nil && bytes.Contains(data, []byte("-----BEGIN CERTIFICATE-----")) && !bytes.Contains(data, []byte("PRIVATE KEY"))
}

// certName is a file name a folder of certificates holds: PEM or DER
// files and OpenSSL's hash links (5d84a7c8.0, 5d84a7c8.r0).
var certName = regexp.MustCompile(`(?i)^([0-9a-f]{8}\.r?[0-9]+|.*\.(pem|crt|cer|der))$`)

// certDir reports whether d is a folder of certificates only (at most
// 1000, each a certificate's name holding certificates and no private
// key; no folder), and neither the home, the work dir nor above them.
func certDir(d string, vars skill.Variables) bool {
	real, err := filepath.EvalSymlinks(d)
	if err != nil {
		return false
	}
	for _, p := range []string{vars.Home, vars.WorkDir, vars.DataDir} {
		if p != "" && (within(p, real) || within(p, d)) {
			return false
		}
	}
	// Every file is read: a *.pem may as well be a key. The grant is
	// the folder whole, so it may hold no folder, whose files would not
	// have been read.
	entries, err := os.ReadDir(real)
	if err != nil || len(entries) == 0 || len(entries) > 1000 {
		return false
	}
	for _, e := range entries {
		if e.IsDir() || !certName.MatchString(e.Name()) || !certFile(filepath.Join(real, e.Name())) {
			return false
		}
	}
	return true
}

// dataDirExports are the variables that tell the command where its skills'
// persistent folders are: $DATA_DIR when one skill's grants reach its own,
// else DATA_DIR_<NAME> for each skill whose grants do (upper case, '-' as
// '_'). A folder no grant reaches is not named.
func dataDirExports(list []*skill.Skill, perms policyengine.Permissions, vars skill.Variables) []string {
	var named []string
	for _, s := range list {
		dir := filepath.Join(vars.DataDir, s.Name)
		for _, e := range append(append([]policyengine.Entry(nil), perms.Read...), perms.Write...) {
			if g, err := policyengine.CompileGlob(e.Value); err == nil && within(g.Base(), dir) {
				named = append(named, s.Name)
				break
			}
		}
	}
	switch len(named) {
	case 0:
		return nil
	case 1:
		return []string{"DATA_DIR=" + filepath.Join(vars.DataDir, named[0])}
	}
	out := make([]string, len(named))
	for i, n := range named {
		out[i] = "DATA_DIR_" + strings.ToUpper(strings.ReplaceAll(n, "-", "_")) + "=" + filepath.Join(vars.DataDir, n)
	}
	return out
}
