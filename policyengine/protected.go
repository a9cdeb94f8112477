package policyengine

// ProtectedPath is a file or folder that host tools run, source or load
// code from later, outside the sandbox: written by a sandboxed command, it
// would run on the host after the sandbox is gone. Inside a writable root
// it stays read-only unless a write grant names it exactly (its glob's
// base is the path), and it must not appear where it did not exist.
//
// The list is data, kept in this one place: the Linux plan builder, the
// macOS Seatbelt profile and `corral explain` all read it.
type ProtectedPath struct {
	// Path is relative: to $HOME when Home is set, otherwise to the top
	// of every writable root (a work dir may be a home folder, and a
	// repository carries its own editor and agent configs).
	Path string `json:"path"`
	Home bool   `json:"home,omitempty"`
	Dir  bool   `json:"dir,omitempty"`
	Why  string `json:"why"`
}

// Reasons shared by many entries.
const (
	whyShell  = "shell start-up file: sourced by every new shell"
	whyEditor = "editor config: can run commands when the editor starts"
	whyAgent  = "agent or IDE config: starts MCP servers, hooks or tasks"
	whyPATH   = "on PATH: a program put here runs instead of the real one"
	whyPkg    = "package manager config: can run scripts or point to other code"
)

// ProtectedPaths are the protected paths. Sources: every shell's
// documented start-up files; Anthropic sandbox-runtime's mandatory-deny
// list (.gitconfig, shell rc files, .ripgreprc, .mcp.json, .vscode,
// .idea, .claude); Codex's read-only subpaths of writable roots (.git,
// .codex, .agents); the XDG and systemd user folders; the PATH folders
// of the common language installers. Git's own folders inside repositories
// (.git/hooks, .git/config...) are handled with the repositories.
var ProtectedPaths = []ProtectedPath{
	// At the top of every writable root.
	{Path: ".git/hooks", Dir: true, Why: "git runs its hooks"},
	{Path: ".git/config", Why: "git config: runs fsmonitor, pager, filters, aliases"},
	{Path: ".gitconfig", Why: "git config: runs fsmonitor, pager, filters, aliases"},
	{Path: ".bashrc", Why: whyShell},
	{Path: ".bash_profile", Why: whyShell},
	{Path: ".bash_login", Why: whyShell},
	{Path: ".bash_logout", Why: whyShell},
	{Path: ".bash_aliases", Why: whyShell},
	{Path: ".profile", Why: whyShell},
	{Path: ".zshrc", Why: whyShell},
	{Path: ".zshenv", Why: whyShell},
	{Path: ".zprofile", Why: whyShell},
	{Path: ".zlogin", Why: whyShell},
	{Path: ".zlogout", Why: whyShell},
	{Path: ".envrc", Why: "direnv: sourced when a shell enters the folder"},
	{Path: ".ripgreprc", Why: "ripgrep config: --pre runs a program on every file searched"},
	{Path: ".mcp.json", Why: whyAgent},
	{Path: ".claude", Dir: true, Why: whyAgent},
	{Path: ".codex", Dir: true, Why: whyAgent},
	{Path: ".agents", Dir: true, Why: whyAgent},
	{Path: ".cursor", Dir: true, Why: whyAgent},
	{Path: ".gemini", Dir: true, Why: whyAgent},
	{Path: ".vscode", Dir: true, Why: whyAgent},
	{Path: ".idea", Dir: true, Why: whyAgent},

	// Shells, relative to $HOME.
	{Path: ".bashrc.d", Home: true, Dir: true, Why: whyShell},
	{Path: ".kshrc", Home: true, Why: whyShell},
	{Path: ".mkshrc", Home: true, Why: whyShell},
	{Path: ".cshrc", Home: true, Why: whyShell},
	{Path: ".tcshrc", Home: true, Why: whyShell},
	{Path: ".login", Home: true, Why: whyShell},
	{Path: ".logout", Home: true, Why: whyShell},
	{Path: ".zsh", Home: true, Dir: true, Why: whyShell},
	{Path: ".oh-my-zsh", Home: true, Dir: true, Why: whyShell},
	{Path: ".config/zsh", Home: true, Dir: true, Why: whyShell},
	{Path: ".config/fish", Home: true, Dir: true, Why: whyShell},
	{Path: ".config/nushell", Home: true, Dir: true, Why: whyShell},
	{Path: ".inputrc", Home: true, Why: "readline: key bindings type commands into shells"},
	{Path: ".tmux.conf", Home: true, Why: "tmux config: run-shell"},
	{Path: ".config/tmux", Home: true, Dir: true, Why: "tmux config: run-shell"},
	{Path: ".screenrc", Home: true, Why: "screen config: runs commands"},
	{Path: ".config/direnv", Home: true, Dir: true, Why: "direnv: direnvrc is sourced by every .envrc"},
	// Sessions and services.
	{Path: ".ssh", Home: true, Dir: true, Why: "ssh: config (ProxyCommand), authorized_keys, rc, environment"},
	{Path: ".pam_environment", Home: true, Why: "session environment (LD_PRELOAD, PATH)"},
	{Path: ".config/environment.d", Home: true, Dir: true, Why: "systemd user session environment"},
	{Path: ".config/systemd", Home: true, Dir: true, Why: "systemd user units and timers"},
	{Path: ".local/share/systemd", Home: true, Dir: true, Why: "systemd user units and timers"},
	{Path: ".config/autostart", Home: true, Dir: true, Why: "desktop autostart entries"},
	{Path: ".config/i3", Home: true, Dir: true, Why: "i3 config: exec lines run at login"},
	{Path: ".i3", Home: true, Dir: true, Why: "i3 config: exec lines run at login"},
	{Path: ".config/sway", Home: true, Dir: true, Why: "sway config: exec lines run at login"},
	{Path: ".config/hypr", Home: true, Dir: true, Why: "Hyprland config: exec-once runs at login"},
	{Path: ".config/openbox", Home: true, Dir: true, Why: "openbox autostart runs at login"},
	{Path: ".config/lxsession", Home: true, Dir: true, Why: "LXDE autostart runs at login"},
	{Path: ".config/mimeapps.list", Home: true, Why: "which program xdg-open runs for a file"},
	{Path: ".local/share/applications", Home: true, Dir: true, Why: "desktop entries: the programs xdg-open and menus run"},
	{Path: ".xinitrc", Home: true, Why: "X session script"},
	{Path: ".xprofile", Home: true, Why: "X session script"},
	{Path: ".xsession", Home: true, Why: "X session script"},
	{Path: ".xsessionrc", Home: true, Why: "X session script"},
	{Path: ".mailcap", Home: true, Why: "mailcap: commands that open files"},
	{Path: ".gdbinit", Home: true, Why: "gdb runs it at start"},
	{Path: ".config/gdb", Home: true, Dir: true, Why: "gdb runs it at start"},
	{Path: ".lldbinit", Home: true, Why: "lldb runs it at start"},
	{Path: ".psqlrc", Home: true, Why: "psql runs it at start (\\! runs commands)"},
	{Path: ".sqliterc", Home: true, Why: "sqlite3 runs it at start (.shell, .system run commands)"},
	{Path: ".pdbrc", Home: true, Why: "pdb runs it at start (! runs Python)"},
	{Path: ".config/pdbrc", Home: true, Why: "pdb runs it at start (! runs Python)"},
	{Path: ".pythonrc", Home: true, Why: "Python start-up file (PYTHONSTARTUP often names it)"},
	{Path: ".pythonrc.py", Home: true, Why: "Python start-up file (PYTHONSTARTUP often names it)"},
	{Path: ".lesskey", Home: true, Why: "less key file: its #env section sets LESSOPEN, a command less runs on every file (git log's pager)"},
	{Path: ".config/lesskey", Home: true, Why: "less key file: its #env section sets LESSOPEN, a command less runs on every file (git log's pager)"},
	{Path: ".less", Home: true, Why: "compiled less key file: its #env section sets LESSOPEN, a command less runs on every file (git log's pager)"},
	{Path: ".config/less", Home: true, Why: "compiled less key file: its #env section sets LESSOPEN, a command less runs on every file (git log's pager)"},
	{Path: ".selected_editor", Home: true, Why: "sourced by sensible-editor (crontab -e, many tools)"},
	{Path: ".fzf.bash", Home: true, Why: whyShell},
	{Path: ".fzf.zsh", Home: true, Why: whyShell},
	{Path: ".hgrc", Home: true, Why: "Mercurial config: hooks and aliases run commands"},
	{Path: ".config/hg", Home: true, Dir: true, Why: "Mercurial config: hooks and aliases run commands"},
	{Path: ".config/jj", Home: true, Dir: true, Why: "Jujutsu config: aliases and tools run commands"},
	{Path: ".gnupg", Home: true, Dir: true, Why: "GnuPG: gpg.conf and gpg-agent.conf name programs it runs (agent-program, pinentry), also for signed git commits"},
	{Path: ".lessfilter", Home: true, Why: "lesspipe runs it on every file less opens"},
	{Path: ".bash_completion", Home: true, Why: "sourced by bash-completion in every interactive bash"},
	{Path: ".local/share/bash-completion", Home: true, Dir: true, Why: "bash-completion sources the completions there"},
	{Path: ".config/bash_completion", Home: true, Why: "sourced by bash-completion in every interactive bash"},
	{Path: ".wgetrc", Home: true, Why: "wget config: can set a program to run (use_askpass)"},
	{Path: ".curlrc", Home: true, Why: "curl config: changes where every curl call sends and writes"},
	{Path: ".netrc", Home: true, Why: "credentials and macros for ftp, curl and git"},
	{Path: ".config/gh", Home: true, Dir: true, Why: "GitHub CLI config: aliases run shell commands"},
	{Path: ".config/mc", Home: true, Dir: true, Why: "midnight commander: menus and file bindings run commands"},
	{Path: ".config/ranger", Home: true, Dir: true, Why: "ranger config is Python and shell commands"},
	{Path: ".config/starship.toml", Home: true, Why: "prompt config: custom modules run commands in every prompt"},
	{Path: ".config/kitty", Home: true, Dir: true, Why: "terminal config: can run programs"},
	{Path: ".config/alacritty", Home: true, Dir: true, Why: "terminal config: can run programs"},
	{Path: ".config/wezterm", Home: true, Dir: true, Why: "terminal config is Lua"},
	{Path: ".wezterm.lua", Home: true, Why: "terminal config is Lua"},
	{Path: ".condarc", Home: true, Why: whyPkg},
	{Path: ".config/pypoetry", Home: true, Dir: true, Why: whyPkg},
	{Path: ".config/composer", Home: true, Dir: true, Why: whyPkg + " (scripts)"},
	{Path: ".composer", Home: true, Dir: true, Why: whyPkg + " (scripts)"},
	// Programs on PATH and code the host loads.
	{Path: "bin", Home: true, Dir: true, Why: whyPATH},
	{Path: ".local/bin", Home: true, Dir: true, Why: whyPATH},
	{Path: ".local/lib", Home: true, Dir: true, Why: "Python user site-packages (.pth files and usercustomize run at every start) and other user libraries"},
	{Path: ".cargo/bin", Home: true, Dir: true, Why: whyPATH},
	{Path: ".cargo/env", Home: true, Why: whyShell + " (rustup's installer adds it to the shell's start-up files)"},
	{Path: ".deno/env", Home: true, Why: whyShell + " (the installer adds it to the shell's start-up files)"},
	{Path: ".ghcup/env", Home: true, Why: whyShell + " (the installer adds it to the shell's start-up files)"},
	{Path: ".asdf", Home: true, Dir: true, Why: whyPATH + " (asdf.sh is sourced by shells)"},
	{Path: ".opam/opam-init", Home: true, Dir: true, Why: whyShell + " (opam's init scripts)"},
	{Path: ".virtualenvs", Home: true, Dir: true, Why: "virtualenvwrapper sources its hook scripts"},
	{Path: "go/bin", Home: true, Dir: true, Why: whyPATH},
	{Path: ".deno/bin", Home: true, Dir: true, Why: whyPATH},
	{Path: ".bun/bin", Home: true, Dir: true, Why: whyPATH},
	{Path: ".volta", Home: true, Dir: true, Why: whyPATH},
	{Path: ".nvm", Home: true, Dir: true, Why: whyPATH + " (nvm.sh is sourced by shells)"},
	{Path: ".pyenv", Home: true, Dir: true, Why: whyPATH},
	{Path: ".rbenv", Home: true, Dir: true, Why: whyPATH},
	{Path: ".rustup", Home: true, Dir: true, Why: whyPATH + " (toolchains)"},
	{Path: ".sdkman", Home: true, Dir: true, Why: whyPATH},
	{Path: ".ipython", Home: true, Dir: true, Why: "IPython runs its startup scripts"},
	{Path: ".jupyter", Home: true, Dir: true, Why: "Jupyter configs are Python"},
	{Path: ".Rprofile", Home: true, Why: "R runs it at start"},
	{Path: ".irbrc", Home: true, Why: "irb runs it at start"},
	{Path: ".pryrc", Home: true, Why: "pry runs it at start"},
	// Package managers.
	{Path: ".npmrc", Home: true, Why: whyPkg},
	{Path: ".yarnrc", Home: true, Why: whyPkg},
	{Path: ".yarnrc.yml", Home: true, Why: whyPkg + " (yarnPath runs a file)"},
	{Path: ".config/pip", Home: true, Dir: true, Why: whyPkg},
	{Path: ".pip", Home: true, Dir: true, Why: whyPkg},
	{Path: ".pydistutils.cfg", Home: true, Why: whyPkg},
	{Path: ".config/uv", Home: true, Dir: true, Why: whyPkg},
	{Path: ".cargo/config", Home: true, Why: whyPkg + " (runners, aliases)"},
	{Path: ".cargo/config.toml", Home: true, Why: whyPkg + " (runners, aliases)"},
	{Path: ".gemrc", Home: true, Why: whyPkg},
	{Path: ".bundle", Home: true, Dir: true, Why: whyPkg},
	{Path: ".m2/settings.xml", Home: true, Why: whyPkg},
	{Path: ".gradle/init.d", Home: true, Dir: true, Why: whyPkg + " (init scripts run on every build)"},
	{Path: ".gradle/init.gradle", Home: true, Why: whyPkg + " (runs on every build)"},
	{Path: ".gradle/init.gradle.kts", Home: true, Why: whyPkg + " (runs on every build)"},
	{Path: ".terraformrc", Home: true, Why: "terraform: provider installation and credential helpers run programs"},
	{Path: ".bazelrc", Home: true, Why: "bazel: flags such as --run_under and --workspace_status_command run programs"},
	{Path: ".erlang", Home: true, Why: "the Erlang shell evaluates it at start"},
	{Path: ".ghci", Home: true, Why: "ghci runs it at start (:! runs commands)"},
	{Path: ".config/ghc", Home: true, Dir: true, Why: "ghci runs ghci.conf at start"},
	{Path: ".gradle/gradle.properties", Home: true, Why: whyPkg},
	{Path: ".docker/config.json", Home: true, Why: "docker: credential helpers are programs it runs"},
	{Path: ".docker/cli-plugins", Home: true, Dir: true, Why: "docker runs every CLI plugin there, even for docker --help"},
	{Path: ".config/containers", Home: true, Dir: true, Why: "podman and buildah: containers.conf names the runtime and hooks it runs"},
	{Path: ".config/go/env", Home: true, Why: "go env file: GOFLAGS (-toolexec) runs a program on every build"},
	{Path: ".npm-init.js", Home: true, Why: "npm init runs it"},
	{Path: ".kube", Home: true, Dir: true, Why: "kubectl: exec credential plugins run commands"},
	{Path: ".aws/config", Home: true, Why: "aws: credential_process runs a command"},
	// Git and editors.
	{Path: ".config/git", Home: true, Dir: true, Why: "git config and attributes: fsmonitor, pager, filters, aliases"},
	{Path: ".vimrc", Home: true, Why: whyEditor},
	{Path: ".gvimrc", Home: true, Why: whyEditor},
	{Path: ".exrc", Home: true, Why: whyEditor},
	{Path: ".vim", Home: true, Dir: true, Why: whyEditor + " (plugins)"},
	{Path: ".config/nvim", Home: true, Dir: true, Why: whyEditor},
	{Path: ".local/share/nvim", Home: true, Dir: true, Why: whyEditor + " (plugins)"},
	{Path: ".emacs", Home: true, Why: whyEditor},
	{Path: ".emacs.d", Home: true, Dir: true, Why: whyEditor},
	{Path: ".config/emacs", Home: true, Dir: true, Why: whyEditor},
	{Path: ".nanorc", Home: true, Why: whyEditor},
	{Path: ".config/nano", Home: true, Dir: true, Why: whyEditor},
	{Path: ".config/Code/User", Home: true, Dir: true, Why: whyAgent},
	{Path: ".config/Code - Insiders/User", Home: true, Dir: true, Why: whyAgent},
	{Path: ".config/VSCodium/User", Home: true, Dir: true, Why: whyAgent},
	{Path: ".config/Cursor/User", Home: true, Dir: true, Why: whyAgent},
	{Path: ".config/vim", Home: true, Dir: true, Why: whyEditor},
	{Path: ".config/helix", Home: true, Dir: true, Why: whyEditor},
	{Path: ".config/zed", Home: true, Dir: true, Why: whyEditor},
	{Path: ".config/micro", Home: true, Dir: true, Why: whyEditor},
	{Path: ".config/lf", Home: true, Dir: true, Why: "file manager config runs commands"},
	{Path: ".config/vifm", Home: true, Dir: true, Why: "file manager config runs commands"},
	{Path: ".config/yazi", Home: true, Dir: true, Why: "file manager config runs commands"},
	{Path: ".vscode-server", Home: true, Dir: true, Why: "VS Code server and its extensions"},
	{Path: ".config/JetBrains", Home: true, Dir: true, Why: whyAgent},
	// Agents.
	{Path: ".claude.json", Home: true, Why: whyAgent},
	{Path: ".config/corral", Home: true, Dir: true, Why: "corral's own global agent policy"},
}
