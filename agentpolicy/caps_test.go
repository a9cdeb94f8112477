package agentpolicy

import (
	"net/netip"
	"testing"

	"corral.dev/corral/policyengine"
)

const capsPolicy = `caps:
  fs:
    read: ["~/docs/**", "$DATA_DIR/shared/*.json"]
    write: ["$WORK_DIR/**", "$TMPDIR/**"]
  network: ["*.example.com:443", "preset:loopback:8080", "10.0.0.5:5432", "[2001:db8::1]:*"]
  env: ["AWS_*", "GITHUB_TOKEN"]
  limits: {memory: 512Mi, pids: 64, timeout: 10m}
`

const capsReason = "the " + projectLabel + " policy's caps: "

// TestCapsFS: fs caps with $WORK_DIR, $TMPDIR, $DATA_DIR and ~.
func TestCapsFS(t *testing.T) {
	e := project(t, capsPolicy)
	for _, tt := range []struct {
		op, path string
		want     policyengine.Action
	}{
		{"read", "/work/src/main.go", policyengine.Allow}, // write implies read
		{"read", "src/main.go", policyengine.Allow},       // relative to $WORK_DIR
		{"read", "/home/u/docs/a/b.md", policyengine.Allow},
		{"read", "/data/shared/x.json", policyengine.Allow},
		{"read", "/data/shared/sub/x.json", policyengine.Deny},
		{"read", "/tmp/t/x", policyengine.Allow},
		{"read", "/home/u/.ssh/id_ed25519", policyengine.Deny},
		{"read", "/home/u/docs/../.ssh/id_ed25519", policyengine.Deny},
		{"read", "/work/../etc/shadow", policyengine.Deny},
		{"read", "/etc/shadow", policyengine.Deny},
		{"read", "/usr/bin/git", policyengine.Allow}, // the system baseline is never capped
		{"read", "", policyengine.Deny},
		{"write", "/work/out/a.txt", policyengine.Allow},
		{"write", "out/a.txt", policyengine.Allow},
		{"write", "/tmp/t/x", policyengine.Allow},
		{"write", "/home/u/docs/a.md", policyengine.Deny},
		{"write", "/work/../home/u/.bashrc", policyengine.Deny},
		{"write", "/dev/null", policyengine.Allow},
	} {
		var d policyengine.Decision
		if tt.op == "read" {
			d = e.CheckRead(tt.path)
		} else {
			d = e.CheckWrite(tt.path)
		}
		layer := ""
		if tt.want == policyengine.Deny {
			layer = projectLabel
		}
		wantDecision(t, tt.op+" "+tt.path, d, tt.want, "-", layer)
		if tt.want == policyengine.Deny {
			wantContains(t, tt.path, d.Reason, capsReason)
		}
	}
}

// TestCapsNetwork: network caps, presets included, for names, addresses
// and URLs.
func TestCapsNetwork(t *testing.T) {
	e := project(t, capsPolicy)
	for _, tt := range []struct {
		host string
		port int
		want policyengine.Action
	}{
		{"api.example.com", 443, policyengine.Allow},
		{"API.Example.COM.", 443, policyengine.Allow},
		{"example.com", 443, policyengine.Deny},
		{"api.example.com", 80, policyengine.Deny},
		{"evil.com", 443, policyengine.Deny},
		{"127.0.0.1", 8080, policyengine.Allow},
		{"localhost", 8080, policyengine.Allow},
		{"0x7f000001", 8080, policyengine.Allow},
		{"::1", 8080, policyengine.Allow},
		{"127.0.0.1", 443, policyengine.Deny},
		{"169.254.169.254", 80, policyengine.Deny},
		{"metadata.google.internal", 443, policyengine.Deny},
		{"10.0.0.5", 5432, policyengine.Allow},
		{"012.0.0.5", 5432, policyengine.Allow},
		{"10.0.0.6", 5432, policyengine.Deny},
		{"2001:db8::1", 22, policyengine.Allow},
		{"1.2.3.4.5", 443, policyengine.Deny},
	} {
		d := e.CheckNetwork(tt.host, tt.port)
		layer := ""
		if tt.want == policyengine.Deny {
			layer = projectLabel
		}
		wantDecision(t, tt.host, d, tt.want, "-", layer)
	}

	for _, tt := range []struct {
		addr string
		port int
		want policyengine.Action
	}{
		{"93.184.216.34", 443, policyengine.Allow}, // public: allowed with its name
		{"127.0.0.1", 443, policyengine.Deny},
		{"127.0.0.1", 8080, policyengine.Allow},
		{"::ffff:127.0.0.1", 8080, policyengine.Allow},
		{"169.254.169.254", 443, policyengine.Deny},
		{"10.0.0.5", 443, policyengine.Deny},
		{"192.168.1.1", 443, policyengine.Deny},
	} {
		d := e.CheckAddr("api.example.com", netip.MustParseAddr(tt.addr), tt.port)
		wantDecision(t, "api.example.com -> "+tt.addr, d, tt.want, "-", "-")
	}

	// With no URL policy, the network caps decide URLs.
	for _, tt := range []struct {
		url  string
		want policyengine.Action
	}{
		{"https://api.example.com/x", policyengine.Allow},
		{"http://api.example.com/x", policyengine.Deny},
		{"https://evil.com/", policyengine.Deny},
		{"http://127.1:8080/", policyengine.Allow},
		{"http://[::1]:8080/", policyengine.Allow},
		{"http://evil.com@127.0.0.1:8080/", policyengine.Allow},
		{"http://169.254.169.254/", policyengine.Deny},
	} {
		wantDecision(t, tt.url, e.CheckURL(tt.url), tt.want, "-", "-")
	}
}

// TestCapsAfterURLPolicy: a URL the URL policy allows still meets the
// network caps, and a URL policy denial comes first.
func TestCapsAfterURLPolicy(t *testing.T) {
	e := project(t, "url:\n  default: allow\n  deny: ['https://blocked.example.com/*']\ncaps:\n  network: ['*.example.com:443']\n")
	wantDecision(t, "allowed by both", e.CheckURL("https://api.example.com/"), policyengine.Allow, "url.default: allow", projectLabel)
	wantDecision(t, "denied by url", e.CheckURL("https://blocked.example.com/"), policyengine.Deny, "url.deny: https://blocked.example.com/*", projectLabel)
	d := e.CheckURL("https://evil.net/")
	wantDecision(t, "denied by caps", d, policyengine.Deny, "", projectLabel)
	wantContains(t, "denied by caps", d.Reason, capsReason, "evil.net:443")
}

// TestCapsEnv: env names and prefixes; the default variables pass.
func TestCapsEnv(t *testing.T) {
	e := project(t, capsPolicy)
	for _, tt := range []struct {
		name string
		want policyengine.Action
	}{
		{"AWS_REGION", policyengine.Allow},
		{"AWS_", policyengine.Allow},
		{"GITHUB_TOKEN", policyengine.Allow},
		{"GITHUB_TOKEN_2", policyengine.Deny},
		{"SECRET", policyengine.Deny},
		{"aws_region", policyengine.Deny},
		{"PATH", policyengine.Allow},
		{"LC_ALL", policyengine.Allow},
	} {
		wantDecision(t, tt.name, e.CheckEnv(tt.name), tt.want, "-", "-")
	}
}

// TestCapsAbsent: a layer that caps nothing, or not a dimension, or with
// an empty list, leaves it alone.
func TestCapsAbsent(t *testing.T) {
	for _, src := range []string{
		"version: 1\n",
		"caps: {}\n",
		"caps:\n  network: []\n  env: []\n  exec: []\n  fs: {read: [], write: []}\n",
		"caps:\n  limits: {pids: 10}\n",
	} {
		e := project(t, src)
		for what, d := range map[string]policyengine.Decision{
			"read":    e.CheckRead("/etc/shadow"),
			"write":   e.CheckWrite("/etc/shadow"),
			"network": e.CheckNetwork("evil.com", 443),
			"addr":    e.CheckAddr("x", netip.MustParseAddr("169.254.169.254"), 80),
			"env":     e.CheckEnv("SECRET"),
			"exec":    e.CheckExec("ls"),
		} {
			wantDecision(t, src+" "+what, d, policyengine.Allow, "-", "")
		}
	}
	// A layer that caps only the network leaves reads alone.
	e := project(t, "caps:\n  network: ['a.com:443']\n")
	wantDecision(t, "read", e.CheckRead("/anything"), policyengine.Allow, "", "")
	wantDecision(t, "net", e.CheckNetwork("b.com", 443), policyengine.Deny, "", projectLabel)
}

// TestCapsExec: exec caps restrict every program of the line (names
// match their PATH locations), after the command rules.
func TestCapsExec(t *testing.T) {
	e := project(t, "permissions:\n  allow: [{command: make}, {command: curl}]\ncaps:\n  exec: [git, ls, make]\n")
	for _, tt := range []struct {
		line string
		want policyengine.Action
	}{
		{"git status", policyengine.Allow},
		{"make", policyengine.Allow},
		{"ls -la && make", policyengine.Allow},
		{"/usr/bin/git log", policyengine.Confirm}, // the cap allows it, no rule does
		{"git push", policyengine.Confirm},
		{"curl https://evil.example/", policyengine.Deny}, // a rule allows it, the cap does not
		{"rm -rf /", policyengine.Deny},
		{"make && curl x", policyengine.Deny},
		{"ls $(curl x)", policyengine.Deny},
		{"env curl x", policyengine.Deny},
		{"sh -c 'curl x'", policyengine.Deny},
	} {
		d := e.CheckExec(tt.line)
		layer := "" // a confirm names no layer
		switch tt.want {
		case policyengine.Deny:
			layer = projectLabel
		case policyengine.Allow:
			layer = "-" // the rules' layer, or none for the built-in list
		}
		wantDecision(t, tt.line, d, tt.want, "-", layer)
		if tt.want == policyengine.Deny {
			wantContains(t, tt.line, d.Reason, capsReason, "caps.exec")
		}
	}
	// A deny rule still comes first.
	e = project(t, "permissions:\n  deny: [{command: git push}]\ncaps:\n  exec: [ls]\n")
	wantDecision(t, "git push", e.CheckExec("git push"), policyengine.Deny, "permissions.deny {command: git push}", projectLabel)
}

// TestCapsExecOnlyLayerRedirects guards a fixed bug: a layer that caps exec but
// not fs checks shell redirections against an empty fs cap (the system
// baseline only), so "make > build.log" in the work dir is denied by a
// layer that never capped writes.
func TestCapsExecOnlyLayerRedirects(t *testing.T) {
	e := project(t, "permissions:\n  allow: [{command: make}]\ncaps:\n  exec: [make]\n")
	d := e.CheckExec("make > /work/build.log")
	if d.Action == policyengine.Deny {
		t.Errorf("make > /work/build.log: denied by %q: %s", d.Layer, d.Reason)
	}
}

// TestCapsUnsetVariable guards a fixed bug: New expands the caps' paths with
// whatever Options.Vars holds, and an unset variable expands to "", so
// "$WORK_DIR/**" becomes "/**": a caller that forgets Vars gets caps that
// cap nothing.
func TestCapsUnsetVariable(t *testing.T) {
	s := Stack{projectLayer(t, "caps:\n  fs:\n    write: ['$WORK_DIR/**']\n")}
	e, err := New(s, Options{})
	if err == nil && e.CheckRead("/etc/shadow").Action == policyengine.Allow {
		t.Error("New with no WorkDir: no error, and /etc/shadow is readable under a $WORK_DIR/** cap")
	}
}
