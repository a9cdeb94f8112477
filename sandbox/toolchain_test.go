package sandbox

import (
	"slices"
	"testing"
)

// TestToolchainTrees: a bin folder's parent is its toolchain's tree, as
// the parts toolchains are made of (never etc, conf, var); a bin folder in
// a folder too wide, in a dot folder or in a project is granted alone
// (with an exec list, not at all), and a folder not named
// bin (a home folder on a PATH) not at all; rustup's proxies get
// rustup's toolchains; GOROOT's src and pkg come only beside its VERSION
// (a GOPATH's src is the user's).
func TestToolchainTrees(t *testing.T) {
	listing := map[string][]string{
		"/usr/local/go":                      {"CONTRIBUTING.md", "VERSION", "api", "bin", "go.env", "lib", "misc", "pkg", "src", "test"},
		"/home/u/.nvm/versions/node/v22.1.0": {"CHANGELOG.md", "bin", "etc", "include", "lib", "share"},
		"/opt/tomcat":                        {"bin", "conf", "lib", "logs", "var", "webapps"},
		"/opt/jdk":                           {"bin", "conf", "jmods", "lib", "release"},
		"/opt/linked":                        {"bin", "lib"},
		"/home/u/src/project":                {".env", ".git", "bin", "src"},
		"/home/u":                            {"bin", "src"},
		"/srv/me":                            {"bin", "src"},
		"/home/u/go":                         {"bin", "pkg", "src"},
	}
	huge := make([]string, maxToolchainEntries+1)
	for i := range huge {
		huge[i] = string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	listing["/opt/huge"] = huge
	names := func(dir string) ([]string, bool) { l, ok := listing[dir]; return l, ok }
	own := func(p string) bool {
		switch p {
		case "/opt/linked/lib", "/home/u/.rustup/settings.toml":
			return false // a symlink, or missing
		}
		return true
	}
	goTree := []string{"/usr/local/go/VERSION", "/usr/local/go/api", "/usr/local/go/bin", "/usr/local/go/go.env", "/usr/local/go/lib", "/usr/local/go/misc", "/usr/local/go/pkg", "/usr/local/go/src"}
	node := "/home/u/.nvm/versions/node/v22.1.0/"
	nodeTree := []string{node + "bin", node + "include", node + "lib", node + "share"}
	for _, tt := range []struct {
		bin        string
		want       []string
		restricted []string // with an exec list
	}{
		{"/usr/local/go/bin", goTree, goTree},
		{node + "bin", nodeTree, nodeTree},
		{"/opt/tomcat/bin", []string{"/opt/tomcat/bin", "/opt/tomcat/lib"}, []string{"/opt/tomcat/bin", "/opt/tomcat/lib"}},
		{"/opt/jdk/bin", []string{"/opt/jdk/bin", "/opt/jdk/conf", "/opt/jdk/jmods", "/opt/jdk/lib", "/opt/jdk/release"}, []string{"/opt/jdk/bin", "/opt/jdk/conf", "/opt/jdk/jmods", "/opt/jdk/lib", "/opt/jdk/release"}},
		{"/opt/linked/bin", []string{"/opt/linked/bin"}, nil},
		{"/home/u/.cargo/bin", []string{"/home/u/.cargo/bin", "/home/u/.rustup/toolchains"}, []string{"/home/u/.rustup/toolchains"}},
		{"/root/.cargo/bin", []string{"/root/.cargo/bin", "/root/.rustup/toolchains", "/root/.rustup/settings.toml"}, []string{"/root/.rustup/toolchains", "/root/.rustup/settings.toml"}},
		{"/home/u/.pyenv/shims", nil, nil},
		{"/home/u/go/bin", []string{"/home/u/go/bin"}, nil},
		{"/home/u/.local/bin", []string{"/home/u/.local/bin"}, nil},
		{"/home/alice/.local/bin", []string{"/home/alice/.local/bin"}, nil},
		{"/home/u/bin", []string{"/home/u/bin"}, nil},
		{"/home/alice/bin", []string{"/home/alice/bin"}, nil},
		{"/srv/me/bin", []string{"/srv/me/bin"}, nil},
		{"/home/u/src/project/bin", []string{"/home/u/src/project/bin"}, nil},
		{"/opt/bin", []string{"/opt/bin"}, nil},
		{"/usr/local/bin", []string{"/usr/local/bin"}, nil},
		{"/home/bin", []string{"/home/bin"}, nil},
		{"/bin", []string{"/bin"}, nil},
		{"/usr/lib/bin", []string{"/usr/lib/bin"}, nil},
		{"/usr/lib/git-core", nil, nil},
		{"/opt/tool/libexec", nil, nil},
		{"/home/u", nil, nil},
		{"/home", nil, nil},
		{"/root", nil, nil},
		{"/home/u/.ssh", nil, nil},
		{"/opt/huge/bin", []string{"/opt/huge/bin"}, nil},
		{"/opt/unlisted/bin", []string{"/opt/unlisted/bin"}, nil},
	} {
		if got := toolchainTrees(tt.bin, "/home/u", false, names, own); !slices.Equal(got, tt.want) {
			t.Errorf("toolchainTrees(%s) = %q, want %q", tt.bin, got, tt.want)
		}
		if got := toolchainTrees(tt.bin, "/home/u", true, names, own); !slices.Equal(got, tt.restricted) {
			t.Errorf("with an exec list, toolchainTrees(%s) = %q, want %q", tt.bin, got, tt.restricted)
		}
	}
}

// TestToolchainExcluded: a tree the command may write, that holds or sits
// in a write grant, a hidden folder or /etc is never a toolchain's.
func TestToolchainExcluded(t *testing.T) {
	avoid := []string{"/ws", "/home/u/.cache/corral/homes/x"}
	for _, tt := range []struct {
		tree string
		ok   bool
	}{
		{"/usr/local/go/src", true},
		{"/opt/node/lib", true},
		{"/ws/node_modules/.bin", false},
		{"/ws", false},
		{"/", false},
		{"/home/u/.cache", false},
		{"/tmp/x/bin", false},
		{"/var/tmp/go/bin", false},
		{"/run/user/1000/bin", false},
		{"/etc/alternatives", false},
	} {
		if why := toolchainExcluded(tt.tree, avoid); (why == "") != tt.ok {
			t.Errorf("toolchainExcluded(%s) = %q, want ok=%v", tt.tree, why, tt.ok)
		}
	}
}
