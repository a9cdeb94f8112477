package sandbox

import (
	"slices"
	"testing"
)

// TestToolchainTrees: a bin folder's parent is its toolchain's tree, as
// its own subfolders and files without etc; a bin folder in a folder too
// wide, in the home folder's own dot folders, or not named bin is granted
// alone (with an exec list, not at all); rustup's proxies get rustup's
// toolchains.
func TestToolchainTrees(t *testing.T) {
	home := "/home/u"
	entries := func(dir string) ([]string, bool) {
		switch dir {
		case "/usr/local/go":
			return []string{"api", "bin", "pkg", "src"}, true
		case "/home/u/.nvm/versions/node/v22.1.0":
			return []string{"bin", "etc", "include", "lib", "share"}, true
		case "/home/u/src/project":
			return []string{".env", ".git", "bin", "src"}, true
		case "/opt/huge":
			names := make([]string, maxToolchainEntries+1)
			for i := range names {
				names[i] = string(rune('a' + i%26))
			}
			return names, true
		}
		return nil, false
	}
	exists := func(p string) bool { return p == "/home/u/.rustup/toolchains" }
	goTree := []string{"/usr/local/go/api", "/usr/local/go/bin", "/usr/local/go/pkg", "/usr/local/go/src"}
	node := "/home/u/.nvm/versions/node/v22.1.0/"
	nodeTree := []string{node + "bin", node + "include", node + "lib", node + "share"}
	for _, tt := range []struct {
		bin        string
		want       []string
		restricted []string // with an exec list

	}{
		{"/usr/local/go/bin", goTree, goTree},
		{"/home/u/.nvm/versions/node/v22.1.0/bin", nodeTree, nodeTree},
		{"/home/u/.cargo/bin", []string{"/home/u/.cargo/bin", "/home/u/.rustup/toolchains"}, []string{"/home/u/.rustup/toolchains"}},
		{"/home/u/.local/bin", []string{"/home/u/.local/bin"}, nil},
		{"/home/u/bin", []string{"/home/u/bin"}, nil},
		{"/opt/bin", []string{"/opt/bin"}, nil},
		{"/usr/local/bin", []string{"/usr/local/bin"}, nil},
		{"/home/bin", []string{"/home/bin"}, nil},
		{"/bin", []string{"/bin"}, nil},
		{"/usr/lib/bin", []string{"/usr/lib/bin"}, nil},
		{"/usr/lib/git-core", []string{"/usr/lib/git-core"}, nil},
		{"/opt/tool/libexec", []string{"/opt/tool/libexec"}, nil},
		{"/opt/huge/bin", []string{"/opt/huge/bin"}, nil},
		{"/opt/unlisted/bin", []string{"/opt/unlisted/bin"}, nil},
		{"/home/u/src/project/bin", []string{"/home/u/src/project/bin"}, nil},
	} {
		if got := toolchainTrees(tt.bin, home, false, entries, exists); !slices.Equal(got, tt.want) {
			t.Errorf("toolchainTrees(%s) = %q, want %q", tt.bin, got, tt.want)
		}
		if got := toolchainTrees(tt.bin, home, true, entries, exists); !slices.Equal(got, tt.restricted) {
			t.Errorf("with an exec list, toolchainTrees(%s) = %q, want %q", tt.bin, got, tt.restricted)
		}
	}
}

// TestToolchainExcluded: a tree the command may write, that holds or sits
// in a write grant, a hidden folder or /etc is never a toolchain's.
func TestToolchainExcluded(t *testing.T) {
	writable := []string{"/ws", "/home/u/.cache/corral/homes/x"}
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
		if why := toolchainExcluded(tt.tree, writable); (why == "") != tt.ok {
			t.Errorf("toolchainExcluded(%s) = %q, want ok=%v", tt.tree, why, tt.ok)
		}
	}
}
