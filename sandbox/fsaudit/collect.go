package fsaudit

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Bounds on what one run keeps: the records come from the whole host,
// and the command chooses how many it causes.
const (
	maxOpen    = 4096 // events waiting for their end
	maxDomains = 4096 // Landlock domains whose creator is known
	maxKept    = 1000 // distinct denials of the run
	maxPending = 1000 // denials of domains not yet attributed
)

// collector attributes records to one run: a denial is the run's when
// the domain that refused it was created by the run's init (pid).
type collector struct {
	mu      sync.Mutex
	pids    map[int]bool      // the run's processes that may restrict themselves (nil: not known yet)
	open    map[string]*event // by serial
	order   []string          // serials of open, oldest first
	domains map[string]int    // domain → creator pid
	pending []pendingDenial   // denials seen before pid or their domain were known
	kept    []Denial          // the run's, distinct
	seen    map[string]bool   // keys of kept
	more    int               // the run's denials beyond maxKept
	ours    string            // the run's domain, once seen
	raw     int               // the run's denials, counted before de-duplication
	total   int               // denials=N of its deallocation record (-1: not seen)
	freed   bool              // its deallocation record came
	lost    bool              // records were dropped (socket overrun, bounds)
	self    int               // corral's pid, whose marker ends the reading
	marker  int               // 0: none expected; 1: expected; 2: came
}

type pendingDenial struct {
	domain string
	d      Denial
}

func newCollector(self int) *collector {
	return &collector{open: map[string]*event{}, domains: map[string]int{}, seen: map[string]bool{}, total: -1, self: self}
}

// expectMarker says the marker is on its way: the next op=connect
// listener record of corral's pid.
func (c *collector) expectMarker() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.marker = 1
}

// expecting and marked say whether the marker is expected, and came.
func (c *collector) expecting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.marker != 0
}

func (c *collector) marked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.marker == 2
}

// attribute names the run's processes one of which, its init, creates
// the Landlock domain.
func (c *collector) attribute(pids []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pids = map[int]bool{}
	for _, p := range pids {
		c.pids[p] = true
	}
}

// record takes one netlink message (type and text).
func (c *collector) record(typ int, text string) {
	if typ != typeSyscall && typ != typeEOE && typ != typeAccess && typ != typeDomain && typ != typeListener {
		return
	}
	serial, kv := fields(text)
	c.mu.Lock()
	defer c.mu.Unlock()
	if typ == typeListener {
		if c.marker == 1 && kv["op"] == "connect" && kv["pid"] == strconv.Itoa(c.self) {
			c.marker = 2
		}
		return
	}
	if typ == typeDomain && kv["status"] == "deallocated" && c.ours != "" && kv["domain"] == c.ours {
		c.freed = true
		c.total, _ = strconv.Atoi(kv["denials"])
	}
	e := c.open[serial]
	if typ == typeEOE {
		if e != nil {
			c.finish(serial, e)
		}
		return
	}
	if e == nil {
		if typ == typeSyscall {
			return // a syscall event with nothing of Landlock in it so far
		}
		if len(c.order) >= maxOpen {
			c.finish(c.order[0], c.open[c.order[0]])
		}
		e = &event{}
		c.open[serial] = e
		c.order = append(c.order, serial)
	}
	e.add(typ, kv)
}

// finish attributes an ended event's denials. Called with mu held.
func (c *collector) finish(serial string, e *event) {
	delete(c.open, serial)
	if i := slices.Index(c.order, serial); i >= 0 {
		c.order = slices.Delete(c.order, i, i+1)
	}
	for d, pid := range e.domains {
		if len(c.domains) >= maxDomains {
			clear(c.domains) // forget others' domains; the run's is found again below
		}
		c.domains[d] = pid
	}
	for _, a := range e.access {
		d := Denial{Path: a.path, Blockers: a.blockers, Pid: e.pid, Comm: e.comm, Exe: e.exe}
		creator, known := c.domains[a.domain]
		switch {
		case c.pids != nil && known && c.pids[creator]:
			c.ours = a.domain
			c.raw++
			c.keep(d)
		case c.pids != nil && known:
			// another process's domain: not the run's
		case len(c.pending) < maxPending:
			c.pending = append(c.pending, pendingDenial{a.domain, d})
		default:
			c.lost = true
		}
	}
}

// keep adds one of the run's denials once. Called with mu held.
func (c *collector) keep(d Denial) {
	key := d.Path + "\x00" + strings.Join(d.Blockers, ",") + "\x00" + d.Exe
	if c.seen[key] {
		return
	}
	if len(c.kept) >= maxKept {
		c.more++
		return
	}
	c.seen[key] = true
	c.kept = append(c.kept, d)
}

// result ends collecting: open events are finished, pending denials
// attributed, and the run's distinct denials returned with how many
// more there were and whether some may be missing.
func (c *collector) result() (kept []Denial, more int, lost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.order) > 0 {
		c.finish(c.order[0], c.open[c.order[0]])
	}
	for _, p := range c.pending {
		if creator, ok := c.domains[p.domain]; ok && c.pids[creator] {
			c.ours = p.domain
			c.raw++
			c.keep(p.d)
		}
	}
	c.pending = nil
	if c.freed && c.total > c.raw {
		c.lost = true // the kernel logged more than reached corral
	}
	return c.kept, c.more, c.lost
}
