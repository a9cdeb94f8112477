package main

import (
	"corral.dev/corral"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"corral.dev/corral/netns"
	"corral.dev/corral/printable"
)

// netFlags are the egress proxy's flags, shared by exec and proxy.
type netFlags struct {
	auditLog string
	pins     map[string][]netip.Addr
}

func (n *netFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.auditLog, "audit-log", "", "append every proxy decision to `file` as JSON lines")
	fs.Func("resolve", "answer `NAME=ADDR[,ADDR]` for NAME in the proxy instead of DNS (repeatable); the addresses are still checked", func(s string) error {
		name, addrs, err := netns.ParsePin(s)
		if err != nil {
			return err
		}
		if n.pins == nil {
			n.pins = map[string][]netip.Addr{}
		}
		n.pins[name] = append(n.pins[name], addrs...)
		return nil
	})
}

// audit is the proxy's audit, writing to the log file if one was asked
// for (see openOutput; a proxy that decides nothing leaves no file).
func (n *netFlags) audit() (*netns.Audit, func() error, error) {
	if n.auditLog == "" {
		return netns.NewAudit(nil), func() error { return nil }, nil
	}
	f, err := openOutput("--audit-log", n.auditLog, nil, true)
	if err != nil {
		return nil, nil, err
	}
	return netns.NewAudit(f), f.Close, nil
}

func (n *netFlags) config(l *corral.Skills, a *netns.Audit) netns.Config {
	cfg := netns.Config{Engine: l.Engine, Audit: a.Record, HostAddrs: netns.SystemHostAddrs(), Budgets: l.Perms.Budgets}
	if len(n.pins) > 0 {
		cfg.Resolver = &netns.Pinned{Names: n.pins, Next: netns.SystemResolver()}
	}
	return cfg
}

// budgetSummary is one stderr line per network.budget cap the run
// reached.
func budgetSummary(hits []netns.BudgetHit) string {
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "corral: %s: %d request(s) refused or cut\n", printable.Line((&netns.BudgetError{Hit: h}).Error()), h.Refused)
	}
	return b.String()
}

// denialSummary is the stderr summary of the proxy's refusals.
func denialSummary(a *netns.Audit) string {
	denials, more := a.Denials()
	if len(denials) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "corral: the egress proxy refused or could not complete %d request(s):\n", len(denials)+more)
	seen := map[string]bool{}
	for _, d := range denials {
		host := d.Host
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		line := fmt.Sprintf("  %s %s:%d: %d %s", printable.String(d.Method), printable.String(host), d.Port, d.Status, printable.Line(d.Reason))
		if d.Host == "" {
			line = fmt.Sprintf("  %d %s", d.Status, printable.Line(d.Reason))
		}
		if !seen[line] {
			seen[line] = true
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

var proxyCommand = command{
	name:  "proxy",
	usage: "",
	summary: `Run the egress proxy alone (for containers and macOS): HTTP and CONNECT
on ADDR, allowing what the skills' network.allow allows. Ends on SIGINT or
SIGTERM.`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		var sf skillFlags
		sf.register(fs)
		var nf netFlags
		nf.register(fs)
		var pf policyFlags
		pf.register(fs)
		listen := fs.String("listen", "", "listen on `addr` (host:port)")
		return func(args []string) error {
			if len(args) > 0 {
				return failed(fmt.Errorf("unexpected arguments %q", args))
			}
			if *listen == "" {
				return failed(fmt.Errorf("--listen ADDR is required, as in --listen 127.0.0.1:3128"))
			}
			return runProxy(&sf, &nf, &pf, *listen)
		}
	},
}

func runProxy(sf *skillFlags, nf *netFlags, pf *policyFlags, listen string) error {
	l, err := sf.load()
	if err != nil {
		return failed(err)
	}
	a, closeLog, err := nf.audit()
	if err != nil {
		return failed(err)
	}
	defer closeLog()
	ln, err := netns.Listen(listen)
	if err != nil {
		return failed(err)
	}
	cfg := nf.config(l, a)
	cfg.Agent = pf.agent
	ev, err := pf.load(l)
	if err != nil {
		return failed(err)
	}
	if ev != nil {
		cfg.Policy = ev.WithHostAddrs(cfg.HostAddrs)
	}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil {
		cfg.Self = []netip.AddrPort{ap}
	}
	p := netns.New(cfg)
	fmt.Fprintf(os.Stderr, "corral proxy: listening on %s with %d network.allow rule(s)\n", ln.Addr(), len(l.Perms.Network))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		p.Close()
	}()
	p.Serve(ln)
	p.Close()
	if s := denialSummary(a); s != "" {
		fmt.Fprint(os.Stderr, printable.Text(s))
	}
	if s := budgetSummary(p.BudgetHits()); s != "" {
		fmt.Fprint(os.Stderr, printable.Text(s))
	}
	return nil
}
