package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/subako/subako-runner/hostmod/subakohttp"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/runtime"
)

// options are the flags of every command; each command registers the ones
// that apply to it.
type options struct {
	json      bool
	logLevel  string
	logFormat string
	noCache   bool

	memory  string
	fuel    string
	timeout string
	// timeoutIsDiscovery makes --timeout bound discovery (the discover
	// command) instead of only the call.
	timeoutIsDiscovery bool

	tmp      string
	keepTmp  bool
	data     string
	skills   string
	argsFile string

	allowHosts   multiFlag
	credentials  multiFlag
	resolves     multiFlag
	allowPrivate optionalFlag

	dirs multiFlag
	envs multiFlag
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// optionalFlag is a flag that may stand alone (--allow-private) or take a
// value (--allow-private=127.0.0.2/32).
type optionalFlag struct {
	set   bool
	value string
}

func (o *optionalFlag) String() string { return o.value }
func (o *optionalFlag) Set(v string) error {
	o.set = true
	if v != "true" {
		o.value = v
	}
	return nil
}
func (o *optionalFlag) IsBoolFlag() bool { return true }

func newFlagSet(e *env, name, argsUsage, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: subako-runner %s [FLAGS] %s\n\n%s\n\nFlags:\n", name, argsUsage, summary)
		fs.PrintDefaults()
	}
	return fs
}

func (o *options) addOutput(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print one JSON document on stdout instead of human output")
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level of the host itself: debug, info, warn, error")
	fs.StringVar(&o.logFormat, "log-format", "console", "log format of the host itself: console or json")
	o.addCache(fs)
}

// addCache registers --no-cache. By default compiled machine code is kept
// in the user's cache directory, so a second run of the same module skips
// compilation (seconds for a large Go module).
func (o *options) addCache(fs *flag.FlagSet) {
	fs.BoolVar(&o.noCache, "no-cache", false, "do not keep compiled modules in the user cache directory")
}

func (o *options) addLimits(fs *flag.FlagSet) {
	fs.StringVar(&o.memory, "memory", "", "memory limit, e.g. 256MiB (default 256MiB)")
	fs.StringVar(&o.fuel, "fuel", "", "fuel budget in instructions; 0 = unlimited")
	fs.StringVar(&o.timeout, "timeout", "", "wall-clock limit of the call, e.g. 30s (default 60s)")
}

func (o *options) addVolumes(fs *flag.FlagSet) {
	fs.StringVar(&o.tmp, "tmp", "", "use `DIR` as /volume/tmp (default: a fresh temporary directory, removed afterwards)")
	fs.BoolVar(&o.keepTmp, "keep-tmp", false, "keep the temporary /volume/tmp and print its path")
	fs.StringVar(&o.data, "data", "", "mount `DIR` as /volume/data")
	fs.StringVar(&o.skills, "skills", "", "`DIR`'s subdirectories are skills: mount DIR at /skills and each at /skills/<name>")
}

func (o *options) addNetwork(fs *flag.FlagSet) {
	fs.Var(&o.allowHosts, "allow-host", "add an allowlist `PATTERN` (host, *.domain, optionally :port); repeatable")
	fs.Var(&o.credentials, "credential", "`PATTERN=HEADER:VALUE`: the entry PATTERN injects HEADER; VALUE may be env:NAME; repeatable")
	fs.Var(&o.resolves, "resolve", "`HOST:PORT:ADDR[,ADDR...]`: answer DNS for HOST:PORT with these addresses; repeatable")
	fs.Var(&o.allowPrivate, "allow-private", "local testing: without a value turn off the destination check; with `CIDR[,CIDR...]` let only those ranges through")
}

// logger builds the host's zap logger from --log-level and --log-format.
func (o *options) logger(w io.Writer) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(o.logLevel)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %v", err)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch o.logFormat {
	case "json":
		enc = zapcore.NewJSONEncoder(encCfg)
	case "console":
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	default:
		return nil, fmt.Errorf("--log-format must be console or json, not %q", o.logFormat)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), level)), nil
}

// limits applies --memory, --fuel and --timeout to the defaults.
func (o *options) limits() (limits.Limits, error) {
	l := limits.Default()
	if o.memory != "" {
		n, err := limits.ParseSize(o.memory)
		if err != nil {
			return l, fmt.Errorf("--memory: %v", err)
		}
		l.Memory = n
	}
	if o.fuel != "" {
		n, err := strconv.ParseUint(o.fuel, 10, 64)
		if err != nil {
			return l, fmt.Errorf("--fuel: %q is not a whole number of instructions", o.fuel)
		}
		l.Fuel = n
	}
	if o.timeout != "" {
		d, err := limits.ParseDuration(o.timeout)
		if err != nil {
			return l, fmt.Errorf("--timeout: %v", err)
		}
		if d == 0 {
			return l, fmt.Errorf("--timeout must be above zero")
		}
		l.CallTimeout = d
		if o.timeoutIsDiscovery {
			l.DiscoveryTimeout = d
		}
	}
	return l, l.Validate()
}

// policy builds the network policy from the network flags, warning on
// stderr when the destination check is loosened.
func (o *options) policy(e *env) (*subakohttp.Policy, error) {
	cfg := subakohttp.PolicyConfig{Allow: o.allowHosts}
	for _, c := range o.credentials {
		pattern, header, value, err := subakohttp.ParseCredentialFlag(c)
		if err != nil {
			return nil, fmt.Errorf("--credential: %v", err)
		}
		cfg.Credentials = append(cfg.Credentials, subakohttp.Credential{Pattern: pattern, Header: header, Value: credentialValue(e, value)})
	}
	for _, r := range o.resolves {
		hostport, addrs, err := subakohttp.ParseResolve(r)
		if err != nil {
			return nil, fmt.Errorf("--resolve: %v", err)
		}
		if cfg.Resolve == nil {
			cfg.Resolve = map[string][]netip.Addr{}
		}
		cfg.Resolve[hostport] = append(cfg.Resolve[hostport], addrs...)
	}
	if o.allowPrivate.set {
		if o.allowPrivate.value == "" {
			cfg.DisableDestinationCheck = true
			fmt.Fprintln(e.stderr, "subako-runner: WARNING: --allow-private turns off the destination check: the module may reach any address, private ones included")
		} else {
			prefixes, err := subakohttp.ParseAllowPrivate(o.allowPrivate.value)
			if err != nil {
				return nil, fmt.Errorf("--allow-private: %v", err)
			}
			cfg.AllowPrivate = prefixes
			fmt.Fprintf(e.stderr, "subako-runner: WARNING: --allow-private lets the module reach %s\n", o.allowPrivate.value)
		}
	}
	return subakohttp.NewPolicy(cfg)
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

// parseArgs parses flags, then positional arguments; flags come
// before positional arguments and "--" ends them (cli.md).
func parseArgs(fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	rest := fs.Args()
	if len(rest) < min || (max >= 0 && len(rest) > max) {
		fs.Usage()
		return nil, fmt.Errorf("wrong number of arguments")
	}
	return rest, nil
}

// newRuntimeConfig builds the runtime configuration from the flags.
func newRuntimeConfig(o *options, e *env) (runtime.Config, error) {
	lim, err := o.limits()
	if err != nil {
		return runtime.Config{}, err
	}
	log, err := o.logger(e.stderr)
	if err != nil {
		return runtime.Config{}, err
	}
	cfg := runtime.Config{Logger: log, Limits: &lim}
	if !o.noCache {
		if dir, err := os.UserCacheDir(); err == nil {
			cfg.CompilationCacheDir = filepath.Join(dir, "subako-runner", "compiled")
		}
	}
	return cfg, nil
}
