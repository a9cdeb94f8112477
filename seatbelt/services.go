package seatbelt

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// service is what one `services` entry grants: Mach services to look up,
// whole operations, and folders to read, by access level. "full" grants
// every level the service has.
type service struct {
	// what the service is, for comments and errors
	about string
	// levels maps an access level to its grant; "full" is implied.
	levels map[string]grant
	// note is a warning printed whenever the service is granted.
	note string
}

type grant struct {
	mach []string // global-name lookups
	ops  []string // operations allowed without a filter
	read []string // folders (subpaths) readable
}

// services maps `services` names to their grants. A name not listed here
// is an error: the profile would silently lack something a skill relies
// on.
var services = map[string]service{
	"apple-events": {
		about:  "send Apple Events to other applications",
		levels: map[string]grant{"send": {mach: []string{"com.apple.coreservices.appleevents"}, ops: []string{"appleevent-send"}}},
		note:   "apple-events lets the command script other applications, which run outside the sandbox",
	},
	"fonts": {
		about:  "the font server and font folders",
		levels: map[string]grant{"read": {mach: []string{"com.apple.FontObjectsServer", "com.apple.fonts"}, read: []string{"/Library/Fonts"}}},
	},
	"keychain": {
		about: "the security server behind the keychain",
		levels: map[string]grant{
			"read":  {mach: []string{"com.apple.SecurityServer", "com.apple.securityd.xpc"}},
			"write": {mach: []string{"com.apple.SecurityServer", "com.apple.securityd.xpc"}},
		},
		note: "keychain: Seatbelt cannot tell reading the keychain from writing it through the security server; the keychain files themselves need an fs grant (~/Library/Keychains)",
	},
	"notifications": {
		about: "post user and distributed notifications",
		levels: map[string]grant{"send": {
			mach: []string{"com.apple.distributed_notifications@Uv3", "com.apple.usernoted.client", "com.apple.usernotifications.listener"},
			ops:  []string{"distributed-notification-post"},
		}},
	},
	"pasteboard": {
		about: "the general pasteboard (clipboard)",
		levels: map[string]grant{
			"read":  {mach: []string{"com.apple.pasteboard.1"}},
			"write": {mach: []string{"com.apple.pasteboard.1"}},
		},
		note: "pasteboard: Seatbelt cannot tell reading the pasteboard from writing it; either access grants both",
	},
	"preferences": {
		about: "user defaults (CFPreferences) through cfprefsd",
		levels: map[string]grant{
			"read":  {mach: []string{"com.apple.cfprefsd.agent", "com.apple.cfprefsd.daemon"}, ops: []string{"user-preference-read"}, read: []string{"/Library/Preferences"}},
			"write": {mach: []string{"com.apple.cfprefsd.agent", "com.apple.cfprefsd.daemon"}, ops: []string{"user-preference-read", "user-preference-write"}, read: []string{"/Library/Preferences"}},
		},
	},
	"trust": {
		about:  "certificate trust evaluation (trustd), which Go and Security.framework TLS clients need",
		levels: map[string]grant{"read": {mach: []string{"com.apple.SecurityServer", "com.apple.ocspd", "com.apple.trustd", "com.apple.trustd.agent"}}},
		note:   "trust: trustd fetches revocation and issuer data itself, outside the egress proxy; a command can make it fetch URLs of its choosing",
	},
}

// serviceGrant returns what the entry "name:access" grants, and a note to
// warn with.
func serviceGrant(entry string) (grant, string, error) {
	name, access, _ := strings.Cut(entry, ":")
	s, ok := services[name]
	if !ok {
		return grant{}, "", fmt.Errorf("services: %q is not a service corral knows (known: %s)", name, strings.Join(serviceNames(), ", "))
	}
	levels := make([]string, 0, len(s.levels)+1)
	for l := range s.levels {
		levels = append(levels, l)
	}
	sort.Strings(levels)
	levels = append(levels, "full")
	var g grant
	switch {
	case access == "full":
		for _, l := range levels[:len(levels)-1] {
			g = g.union(s.levels[l])
		}
	case s.levels[access].mach != nil || s.levels[access].ops != nil:
		g = s.levels[access]
	default:
		return grant{}, "", fmt.Errorf("services: %s (%s) takes access %s, not %q", name, s.about, strings.Join(levels, ", "), access)
	}
	return g, s.note, nil
}

func (g grant) union(h grant) grant {
	u := func(a, b []string) []string {
		out := slices.Concat(a, b)
		slices.Sort(out)
		return slices.Compact(out)
	}
	return grant{mach: u(g.mach, h.mach), ops: u(g.ops, h.ops), read: u(g.read, h.read)}
}

func serviceNames() []string {
	names := make([]string, 0, len(services))
	for n := range services {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
