package seatbelt

// The base section: what ordinary programs (a shell, curl, python) need
// from macOS beyond their files. Each list is ours, shaped by what
// Chromium's common.sb, OpenAI Codex's seatbelt base policy and
// Anthropic's sandbox-runtime grant, kept to what a command-line tool run
// by an agent needs: no GUI, no audio, no launch of other applications.

// sysctlNames may be read: hardware and OS identification that runtimes
// (libc, Go, Python, Node, the JVM) ask for at start-up.
var sysctlNames = []string{
	"hw.activecpu", "hw.busfrequency_compat", "hw.byteorder", "hw.cachelinesize",
	"hw.cachelinesize_compat", "hw.cpufamily", "hw.cpufrequency", "hw.cpufrequency_compat",
	"hw.cpusubtype", "hw.cputype", "hw.l1dcachesize", "hw.l1dcachesize_compat",
	"hw.l1icachesize", "hw.l1icachesize_compat", "hw.l2cachesize", "hw.l2cachesize_compat",
	"hw.l3cachesize_compat", "hw.logicalcpu", "hw.logicalcpu_max", "hw.machine",
	"hw.memsize", "hw.model", "hw.ncpu", "hw.nperflevels", "hw.packages", "hw.pagesize",
	"hw.pagesize_compat", "hw.physicalcpu", "hw.physicalcpu_max", "hw.tbfrequency",
	"hw.tbfrequency_compat", "hw.vectorunit",
	"kern.argmax", "kern.boottime", "kern.clockrate", "kern.hostname", "kern.maxfiles",
	"kern.maxfilesperproc", "kern.maxproc", "kern.ngroups", "kern.osproductversion",
	"kern.osrelease", "kern.ostype", "kern.osvariant_status", "kern.osversion",
	"kern.secure_kernel", "kern.usrstack64", "kern.version",
	"machdep.cpu.brand_string", "machdep.ptrauth_enabled",
	"security.mac.lockdown_mode_state", "sysctl.proc_cputype", "sysctl.proc_native",
	"vm.loadavg",
}

// sysctlPrefixes may be read by prefix: CPU features, performance levels,
// and a process's own kinfo_proc (kern.proc.pid.N; Seatbelt cannot name
// the sandbox's own pids, so other processes' names and owners can be
// read too, as under Codex's policy).
var sysctlPrefixes = []string{"hw.optional.", "hw.perflevel", "kern.proc.pid.", "machdep.cpu."}

// machServices are the Mach services every sandbox may look up: user and
// group lookups (getpwuid, which shells and curl call), logging, and the
// notification centre libinfo's caches listen on.
var machServices = []string{
	"com.apple.logd",
	"com.apple.system.DirectoryService.libinfo_v1",
	"com.apple.system.logger",
	"com.apple.system.notification_center",
	"com.apple.system.opendirectoryd.libinfo",
	"com.apple.system.opendirectoryd.membership",
}

// systemRead are the macOS folders every sandbox may read, in addition to
// policyengine.SystemRead: frameworks and the dyld shared cache (which
// lives in cryptexes since macOS 13), developer tools that /usr/bin shims
// run, Homebrew, the time zone database and the program /bin/sh starts.
// /System/Volumes is left out on purpose: its Data volume is another path
// to every user file.
var systemRead = []string{
	"/Applications/Xcode.app/Contents/Developer/**",
	"/Library/Apple/**",
	"/Library/Developer/CommandLineTools/**",
	"/Library/Frameworks/**",
	"/Library/Preferences/Logging/**",
	"/System/Cryptexes/**",
	"/System/Library/**",
	"/System/Volumes/Preboot/Cryptexes/**",
	"/System/iOSSupport/**",
	"/opt/homebrew/**",
	"/private/etc/bashrc",
	"/private/etc/profile",
	"/private/etc/protocols",
	"/private/etc/services",
	"/private/etc/shells",
	"/private/etc/zprofile",
	"/private/etc/zshenv",
	"/private/etc/zshrc",
	"/private/var/db/dyld/**",
	"/private/var/db/timezone/**",
	"/private/var/db/xcode_select_link",
	"/private/var/select/**",
}

// systemHidden are macOS's configuration folders inside systemRead, left
// out like policyengine.SystemHidden: Homebrew's etc.
var systemHidden = []string{"/opt/homebrew/etc"}

// libraryRoots hold the shared libraries and frameworks programs map as
// code. With an exec allowlist these are the only places (besides the
// allowed programs) code may be mapped from, as Linux leaves only its
// library folders executable to the loader.
var libraryRoots = []string{
	"/Applications/Xcode.app/Contents/Developer",
	"/Library/Apple",
	"/Library/Developer/CommandLineTools",
	"/Library/Frameworks",
	"/System/Cryptexes",
	"/System/Library",
	"/System/Volumes/Preboot/Cryptexes",
	"/System/iOSSupport",
	"/opt/homebrew",
	"/private/var/db/dyld",
	"/usr/lib",
	"/usr/local",
}

// hiddenRoots are never granted, even when a grant covers them (a grant
// of such a folder, or of one holding it, is dropped with a warning, as
// Linux does): the shared temporary folders and sockets of other users
// and programs, the devices (the base grants the few a program needs),
// and /System/Volumes, whose Data volume reaches every file under another
// name. A folder inside one of them (a work dir in /private/tmp) is fine.
var hiddenRoots = []string{
	"/dev", "/private/tmp", "/private/var/folders", "/private/var/run",
	"/private/var/tmp", "/System/Volumes",
}

// shellTrampolines are what /bin/sh runs: on macOS it is a small program
// that starts the shell /private/var/select/sh names (bash, dash or zsh).
// Allowing sh allows them, since each is only sh by another name.
var shellTrampolines = []string{"/bin/bash", "/bin/dash", "/bin/zsh"}

// toolDirs hold the real programs behind the /usr/bin shims of the
// developer tools (git, python3, make...): a bare program name in an exec
// list may run from them as well as from the sandbox's PATH.
var toolDirs = []string{
	"/Library/Developer/CommandLineTools/usr/bin",
	"/Applications/Xcode.app/Contents/Developer/usr/bin",
}
