package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"io"
	"math"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/runtime"
)

// hostFlags are the flags of every command that runs the host: logging,
// the compilation cache, progress and the wire trace.
type hostFlags struct {
	json      bool
	logLevel  string
	logFormat string
	noCache   bool
	quiet     bool
	trace     string // "-" for stderr
	otel      string // --otel: console, otlp, none; "" defers to OTEL_* variables
	// metricsAddr is --metrics-addr (mcp, inspect): serve the metrics for
	// Prometheus there.
	metricsAddr string

	// isolation is --isolation; requireSandbox --require-sandbox.
	isolation      isolationValue
	requireSandbox bool
	// workers is --workers (mcp, inspect, where serves is set): how many
	// worker processes; the one-shot commands run one.
	workers int
	serves  bool
	// readOnly and readWrite are the directories beyond the package's the
	// command's workers must reach (its volumes and mounts), set by the
	// command before it opens the runtime.
	readOnly, readWrite []string
	// closing is set when the command closes its runtime (quietLog).
	closing atomic.Bool

	// status is the status line runtimeConfig made (it draws nothing off
	// a terminal), for a command that shows a step of its own (a call).
	status *progress
}

// register adds the flags; withJSON adds --json too.
func (h *hostFlags) register(cmd *cobra.Command, withJSON bool) {
	fs := cmd.Flags()
	if withJSON {
		fs.BoolVar(&h.json, "json", false, "print one JSON document on stdout instead of human output")
	}
	fs.StringVar(&h.logLevel, "log-level", "warn", "log `LEVEL` of the host itself: debug, info, warn, error")
	fs.StringVar(&h.logFormat, "log-format", "console", "log `FORMAT` of the host itself: console or json")
	fs.BoolVar(&h.noCache, "no-cache", false, "do not keep compiled modules in the user cache directory")
	fs.BoolVarP(&h.quiet, "quiet", "q", false, "no progress line on a terminal")
	fs.StringVar(&h.otel, "otel", "", "export traces and metrics (OpenTelemetry) to `EXPORTER`: console (stderr) or otlp (the OTEL_EXPORTER_OTLP_* endpoint); without it the OTEL_* variables decide")
	fs.Lookup("otel").NoOptDefVal = "console"
	h.registerIsolation(cmd)
}

// logger builds the host's zap logger from --log-level and --log-format.
func (h *hostFlags) logger(w io.Writer) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(h.logLevel)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %v", err)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch h.logFormat {
	case "json":
		enc = zapcore.NewJSONEncoder(encCfg)
	case "console":
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	default:
		return nil, fmt.Errorf("--log-format must be console or json, not %q", h.logFormat)
	}
	// Locked: the runtime logs from several goroutines at once (a
	// worker's relayed entries arrive on its events goroutine), and w may
	// be any writer.
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), level)), nil
}

// registerTrace adds --trace (discover, call, check, mcp).
func (h *hostFlags) registerTrace(cmd *cobra.Command) {
	cmd.Flags().Var((*traceValue)(&h.trace), "trace", "write every line the host and the module exchange, timestamped, on stderr (or with --trace=FILE to FILE)")
	cmd.Flags().Lookup("trace").NoOptDefVal = "stderr"
}

// traceValue is --trace's destination: "-" for stderr (the flag alone,
// --trace=stderr or --trace=-), else a file. Its empty Type and the
// NoOptDefVal "stderr" make the help read `--trace[=stderr]`.
type traceValue string

func (v *traceValue) String() string { return string(*v) }
func (v *traceValue) Type() string   { return "" }
func (v *traceValue) Set(s string) error {
	if s == "stderr" {
		s = "-"
	}
	*v = traceValue(s)
	return nil
}

// runtimeConfig builds the runtime configuration from the flags. path
// names the package or module in the progress line, and is what the
// workers must read. The returned function releases what the
// configuration opened (a --trace file). A path with nothing at it is its
// *fs.PathError (packageErrorText words it).
func (h *hostFlags) runtimeConfig(e *env, lim limits.Limits, path string) (runtime.Config, func(), error) {
	log, err := h.logger(e.stderr)
	if err != nil {
		return runtime.Config{}, nil, err
	}
	if err := missingPackage(path); err != nil {
		return runtime.Config{}, nil, err
	}
	cfg := runtime.Config{Logger: log.WithOptions(zap.WrapCore(h.quietLog)), Limits: &lim}
	if cfg.Isolation = runtime.Isolation(h.isolation); cfg.Isolation == runtime.IsolationWorkers {
		if cfg.Workers, err = h.workerConfig(path); err != nil {
			return runtime.Config{}, nil, err
		}
	}
	if !h.noCache {
		if dir, err := os.UserCacheDir(); err == nil {
			cfg.CompilationCacheDir = filepath.Join(dir, "subako-runner", "compiled")
		}
	}
	exporter, err := otelExporter(h.otel, e.getenv)
	if err != nil {
		return runtime.Config{}, nil, err
	}
	var readers []sdkmetric.Reader
	var metrics *metricsEndpoint
	if h.metricsAddr != "" {
		if metrics, err = startMetrics(h.metricsAddr, e.stderr); err != nil {
			return runtime.Config{}, nil, err
		}
		readers = append(readers, metrics.reader)
	}
	obs, shutdown, err := otelObserver(context.Background(), exporter, e.stderr, e.getenv, readers...)
	if err != nil {
		if metrics != nil {
			metrics.close()
		}
		return runtime.Config{}, nil, err
	}
	if metrics != nil {
		flush := shutdown
		shutdown = func() { metrics.close(); flush() }
	}
	if obs != nil {
		cfg.Observer = obs
	}
	release := shutdown
	switch h.trace {
	case "":
	case "-":
		cfg.Trace = (&tracer{w: e.stderr}).event
	default:
		f, err := os.Create(h.trace)
		if err != nil {
			shutdown()
			return runtime.Config{}, nil, fmt.Errorf("--trace: %v", err)
		}
		cfg.Trace = (&tracer{w: f}).event
		release = func() { f.Close(); shutdown() }
	}
	// The status line only on a terminal, and not over a trace on stderr.
	var statusTo io.Writer
	if !h.quiet && h.trace != "-" && e.terminal(e.stderr) {
		statusTo = e.stderr
	}
	h.status = newProgress(statusTo, log, path, cfg.CompilationCacheDir)
	cfg.Progress = h.status.event
	return cfg, release, nil
}

// openRuntime creates the runtime from the flags; close releases it and
// what the flags opened.
func (h *hostFlags) openRuntime(ctx context.Context, e *env, lim limits.Limits, path string) (rt *runtime.Runtime, close func(), err error) {
	cfg, release, err := h.runtimeConfig(e, lim, path)
	if err != nil {
		return nil, nil, err
	}
	rt, err = runtime.New(ctx, cfg)
	if err != nil {
		release()
		return nil, nil, err
	}
	sandboxWarning(e.stderr, rt.Sandbox())
	return rt, func() { h.closing.Store(true); closeRuntime(ctx, rt); release() }, nil
}

// limitFlags are --memory, --fuel and --timeout.
type limitFlags struct {
	memory  sizeValue
	fuel    fuelValue
	timeout durationValue
	// timeoutIsDiscovery makes --timeout bound discovery (the discover
	// command) instead of only the call.
	timeoutIsDiscovery bool
}

// register defines the flags; the defaults their help names are
// limits.Default's, so the help cannot drift from what an unset flag means.
func (l *limitFlags) register(cmd *cobra.Command) {
	def := limits.Default()
	fs := cmd.Flags()
	fs.Var(&l.memory, "memory", "memory limit of one instance, e.g. 256MiB (default "+limits.FormatSize(def.Memory)+")")
	fs.Var(&l.fuel, "fuel", "fuel budget in instructions: 100000000000, 1e11, 10^11 or 100G; 0 = unlimited (default "+formatFuel(def.Fuel)+")")
	timeoutUsage := "wall-clock limit of the call, e.g. 30s (default " + formatSeconds(def.CallTimeout) + ")"
	if l.timeoutIsDiscovery {
		timeoutUsage = "wall-clock limit of the discovery run, e.g. 30s (default " + formatSeconds(def.DiscoveryTimeout) + ", as at upload)"
	}
	fs.Var(&l.timeout, "timeout", timeoutUsage)
}

// formatFuel writes a budget the way --fuel reads it back, a power of ten
// as 1eN ("1e11"), anything else in digits.
func formatFuel(n uint64) string {
	m, exp := n, 0
	for m >= 10 && m%10 == 0 {
		m, exp = m/10, exp+1
	}
	if exp < 3 {
		return strconv.FormatUint(n, 10)
	}
	return strconv.FormatUint(m, 10) + "e" + strconv.Itoa(exp)
}

// formatSeconds writes a duration as --timeout reads it back, in seconds
// ("60s", "0.5s"), not time.Duration's "1m0s".
func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// limits applies the flags to the defaults.
func (l *limitFlags) limits() (limits.Limits, error) {
	lim := limits.Default()
	if l.memory.set {
		lim.Memory = l.memory.n
	}
	if l.fuel.set {
		lim.Fuel = l.fuel.n
	}
	if l.timeout.set {
		lim.CallTimeout = l.timeout.d
		if l.timeoutIsDiscovery {
			lim.DiscoveryTimeout = l.timeout.d
		}
	}
	return lim, lim.Validate()
}

// volumeFlags are the mounts of a call.
type volumeFlags struct {
	tmp     string
	keepTmp bool
	data    string
	skills  string
}

func (v *volumeFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&v.tmp, "tmp", "", "use `DIR` as /volume/tmp (default: a fresh temporary directory, removed afterwards)")
	fs.BoolVar(&v.keepTmp, "keep-tmp", false, "keep the temporary /volume/tmp and print its path")
	fs.StringVar(&v.data, "data", "", "mount `DIR` as /volume/data")
	fs.StringVar(&v.skills, "skills", "", "`DIR`'s subdirectories are skills: mount DIR at /skills and each at /skills/<name>")
}

// allow lets the command's workers reach the volumes: /skills read-only,
// /volume/data and /volume/tmp (tmp: --tmp, or the kept one the command
// made) read-write.
func (v *volumeFlags) allow(h *hostFlags, tmp string) {
	h.readOnly = append(h.readOnly, v.skills)
	h.readWrite = append(h.readWrite, v.data, tmp)
}

// networkFlags are the network policy of a call or a run.
type networkFlags struct {
	allowHosts   []string
	credentials  []string
	resolves     []string
	allowPrivate allowPrivateValue
}

func (n *networkFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.Var(&repeated{&n.allowHosts, "PATTERN"}, "allow-host", "add an allowlist entry: host, *.domain or IP address, optionally :port; repeatable")
	fs.Var(&repeated{&n.credentials, "PATTERN=HEADER:VALUE"}, "credential", "requests the entry PATTERN allows carry HEADER: VALUE; VALUE may be env:NAME; repeatable")
	fs.Var(&repeated{&n.resolves, "HOST:PORT:ADDR[,ADDR...]"}, "resolve", "answer DNS for HOST:PORT with these addresses (as curl); repeatable")
	fs.Var(&n.allowPrivate, "allow-private", "local testing: let CIDR[,CIDR...] through the destination check (--allow-private 127.0.0.1/32);\nalone (or =all), turn the check off")
	fs.Lookup("allow-private").NoOptDefVal = "all"
}

// set reports whether any network flag was given.
func (n *networkFlags) set() bool {
	return len(n.allowHosts)+len(n.credentials)+len(n.resolves) > 0 || n.allowPrivate.set
}

// policy builds the network policy from the flags, warning on stderr when
// the destination check is loosened.
func (n *networkFlags) policy(e *env) (*subakohttp.Policy, error) {
	cfg := subakohttp.PolicyConfig{Allow: n.allowHosts, Remedy: flagRemedy}
	for _, c := range n.credentials {
		pattern, header, value, err := parseCredential(c)
		if err != nil {
			return nil, err
		}
		cfg.Credentials = append(cfg.Credentials, subakohttp.Credential{Pattern: pattern, Header: header, Value: credentialValue(e, value)})
	}
	for _, r := range n.resolves {
		hostport, addrs, err := parseResolve(r)
		if err != nil {
			return nil, err
		}
		if cfg.Resolve == nil {
			cfg.Resolve = map[string][]string{}
		}
		cfg.Resolve[hostport] = append(cfg.Resolve[hostport], addrStrings(addrs)...)
	}
	if n.allowPrivate.set {
		if n.allowPrivate.all {
			cfg.DisableDestinationCheck = true
			fmt.Fprintln(e.stderr, "subako-runner: WARNING: --allow-private turns off the destination check: the module may reach any address, private ones included")
		} else {
			for _, pre := range n.allowPrivate.prefixes {
				cfg.AllowPrivate = append(cfg.AllowPrivate, pre.String())
			}
			fmt.Fprintf(e.stderr, "subako-runner: WARNING: --allow-private lets the module reach %s\n", n.allowPrivate.String())
		}
	}
	p, err := subakohttp.NewPolicy(cfg)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "subakohttp: "))
	}
	return p, nil
}

// flagRemedy words a refusal's remedy as the flag that lifts it: on the
// command line the user is the function's owner, so the message names the
// flag and its value rather than sending them to an owner.
func flagRemedy(r subakohttp.Refusal) string {
	switch r.Kind {
	case subakohttp.KindHostNotAllowed:
		return "to allow it, add --allow-host " + r.Entry
	case subakohttp.KindForbiddenDestination:
		return "to reach it for local testing, add --allow-private " + netip.PrefixFrom(r.Addr, r.Addr.BitLen()).String()
	}
	return ""
}

// credentialValue reads VALUE at request time: env:NAME from the
// environment (missing → credential_unavailable), anything else literally.
func credentialValue(e *env, value string) func(context.Context) (string, bool) {
	if name, ok := strings.CutPrefix(value, "env:"); ok {
		return func(context.Context) (string, bool) {
			v := e.getenv(name)
			return v, v != ""
		}
	}
	return func(context.Context) (string, bool) { return value, true }
}

// callFlags are the flags of a tool call (call, and the MCP server's
// calls): volumes, network and limits.
type callFlags struct {
	volumes volumeFlags
	network networkFlags
	limits  limitFlags
}

// register adds every call flag to cmd.
func (c *callFlags) register(cmd *cobra.Command) {
	c.limits.register(cmd)
	c.volumes.register(cmd)
	c.network.register(cmd)
}

// request builds the call request of tool from the flags.
func (c *callFlags) request(e *env, tool string, arguments json.RawMessage) (runtime.CallRequest, error) {
	lim, err := c.limits.limits()
	if err != nil {
		return runtime.CallRequest{}, err
	}
	policy, err := c.network.policy(e)
	if err != nil {
		return runtime.CallRequest{}, err
	}
	return runtime.CallRequest{
		Tool: tool, Arguments: arguments,
		Tmp: c.volumes.tmp, Data: c.volumes.data, Skills: c.volumes.skills,
		Network: policy, Limits: &lim,
	}, nil
}

// repeated is a repeatable string flag; placeholder is what help shows
// after the flag's name.
type repeated struct {
	vals        *[]string
	placeholder string
}

func (r *repeated) String() string     { return strings.Join(*r.vals, ",") }
func (r *repeated) Type() string       { return r.placeholder }
func (r *repeated) Set(v string) error { *r.vals = append(*r.vals, v); return nil }

// sizeValue is a --memory value.
type sizeValue struct {
	set  bool
	n    int64
	text string
}

func (v *sizeValue) String() string { return v.text }
func (v *sizeValue) Type() string   { return "SIZE" }
func (v *sizeValue) Set(s string) error {
	n, err := limits.ParseSize(s)
	if err != nil {
		return err
	}
	v.set, v.n, v.text = true, n, s
	return nil
}

// fuelValue is a --fuel value.
type fuelValue struct {
	set  bool
	n    uint64
	text string
}

func (v *fuelValue) String() string { return v.text }
func (v *fuelValue) Type() string   { return "N" }
func (v *fuelValue) Set(s string) error {
	n, err := parseFuel(s)
	if err != nil {
		return err
	}
	v.set, v.n, v.text = true, n, s
	return nil
}

// fuelSuffixes are decimal, as fuel counts instructions, not bytes.
var fuelSuffixes = []struct {
	suffix string
	mult   int64
}{{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}}

// parseFuel reads a number of instructions: digits (with _ separators),
// scientific notation (1e9, 2.5e10), a power of ten (10^9) or a decimal
// suffix (k, M, G, T). It must be a whole number that fits 64 bits.
func parseFuel(s string) (uint64, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	bad := fmt.Errorf("not a whole number of instructions (write 1000000000, 1e9, 10^9 or 1G)")
	if t == "" || strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+") {
		return 0, bad
	}
	mult := big.NewRat(1, 1)
	if base, exp, ok := strings.Cut(t, "^"); ok {
		b, ok1 := new(big.Int).SetString(base, 10)
		e, ok2 := new(big.Int).SetString(exp, 10)
		if !ok1 || !ok2 || e.Sign() < 0 || e.Cmp(big.NewInt(64)) > 0 {
			return 0, bad
		}
		return fitUint64(new(big.Rat).SetInt(new(big.Int).Exp(b, e, nil)), bad)
	}
	for _, u := range fuelSuffixes {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = num, big.NewRat(u.mult, 1)
			break
		}
	}
	if strings.ContainsAny(t, "xXpP") || strings.EqualFold(t, "inf") || strings.EqualFold(t, "nan") {
		return 0, bad
	}
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		// big.Rat reads exponents exactly; cap them so 1e999999999 cannot
		// make it build a huge number.
		var e int
		if _, err := fmt.Sscan(t[i+1:], &e); err != nil || e > 30 || e < -30 {
			return 0, bad
		}
	}
	r, ok := new(big.Rat).SetString(t)
	if !ok {
		return 0, bad
	}
	return fitUint64(r.Mul(r, mult), bad)
}

func fitUint64(r *big.Rat, bad error) (uint64, error) {
	if !r.IsInt() || r.Sign() < 0 {
		return 0, bad
	}
	n := r.Num()
	if !n.IsUint64() {
		return 0, fmt.Errorf("more than %d instructions", uint64(math.MaxUint64))
	}
	return n.Uint64(), nil
}

// durationValue is a --timeout value; zero is refused.
type durationValue struct {
	set  bool
	d    time.Duration
	text string
}

func (v *durationValue) String() string { return v.text }
func (v *durationValue) Type() string   { return "DURATION" }
func (v *durationValue) Set(s string) error {
	d, err := limits.ParseDuration(s)
	if err != nil {
		return err
	}
	if d == 0 {
		return errors.New("must be above zero")
	}
	v.set, v.d, v.text = true, d, s
	return nil
}

// allowPrivateValue is --allow-private: alone (or =all) it turns the
// destination check off; with CIDR[,CIDR...] it lets those ranges through.
type allowPrivateValue struct {
	set      bool
	all      bool
	prefixes []netip.Prefix
	text     string
}

func (v *allowPrivateValue) String() string { return v.text }

// Type is empty so help shows the flag as --allow-private[=all]; the
// usage text names the CIDR form.
func (v *allowPrivateValue) Type() string { return "" }
func (v *allowPrivateValue) Set(s string) error {
	if s == "all" {
		v.set, v.all, v.text = true, true, s
		return nil
	}
	ps, err := parseAllowPrivate(s)
	if err != nil {
		return err
	}
	v.set, v.prefixes = true, append(v.prefixes, ps...)
	if v.text != "" {
		v.text += ","
	}
	v.text += s
	return nil
}

// acceptsWord takes the next word as the value only when it parses as a
// CIDR list: `--allow-private 127.0.0.1/32 pkg` reads the range, while
// `--allow-private pkg` leaves pkg a positional argument.
func (v *allowPrivateValue) acceptsWord(w string) bool {
	_, err := parseAllowPrivate(w)
	return err == nil
}
