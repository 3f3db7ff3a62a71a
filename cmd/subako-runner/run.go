package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/runtime"
)

// exitTrap is run's status when the module trapped or ran out of memory,
// fuel or time, as `wasmtime run` exits on a trap.
const exitTrap = 134

func runRun(ctx context.Context, e *env, args []string) int {
	var o options
	fs := newFlagSet(e, "run", "MODULE [ARG...]", "Run MODULE as a plain WASI preview 1 command under the subako host (our WASI layer,\nsubako_http, the limits), with stdin, stdout and stderr passed through. The exit\nstatus is the module's; a trap or running out of memory, fuel or time exits 134.\nOnly the directories named by --tmp, --data, --skills and --dir are preopened, in\nthat order.")
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level of the host itself")
	fs.StringVar(&o.logFormat, "log-format", "console", "log format of the host itself: console or json")
	o.addCache(fs)
	o.addLimits(fs)
	fs.StringVar(&o.tmp, "tmp", "", "mount `DIR` as /volume/tmp")
	fs.StringVar(&o.data, "data", "", "mount `DIR` as /volume/data")
	fs.StringVar(&o.skills, "skills", "", "mount `DIR` at /skills and each subdirectory at /skills/<name>")
	fs.Var(&o.dirs, "dir", "`HOST[::GUEST]`: an extra preopen (repeatable), like wasmtime run --dir")
	fs.Var(&o.envs, "env", "`NAME=VALUE`: an environment variable for the module (repeatable)")
	o.addNetwork(fs)
	rest, err := parseArgs(fs, args, 1, -1)
	if err != nil {
		return flagExit(err)
	}
	mounts, err := runMounts(&o)
	if err != nil {
		return fail(e, "%v", err)
	}
	for _, kv := range o.envs {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return fail(e, "--env %q: want NAME=VALUE", kv)
		}
	}
	policy, err := o.policy(e)
	if err != nil {
		return fail(e, "%v", err)
	}
	rt, code := openRuntime(ctx, e, &o)
	if rt == nil {
		return code
	}
	defer rt.Close(ctx)
	lim := rt.Limits()
	argv := append([]string{filepath.Base(rest[0])}, rest[1:]...)
	res, err := rt.RunCommand(ctx, rest[0], runtime.Command{
		Args: argv, Env: o.envs, Mounts: mounts, Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr,
		Network: policy, Limits: &lim,
	})
	if err != nil {
		var rej *runtime.RejectedError
		var link *runtime.LinkError
		if errors.As(err, &link) {
			// cli.md: a module that does not link is a host error (2), not
			// a trap; each line names the import, as validate does.
			for _, p := range link.Problems {
				fmt.Fprintf(e.stderr, "subako-runner: %s: %s\n", p.Code, p.Message)
			}
			return exitUsage
		}
		if code, ok := interrupted(ctx, e, err); ok {
			return code
		}
		if errors.As(err, &rej) {
			for _, r := range rej.Rejections {
				fmt.Fprintf(e.stderr, "subako-runner: %s: %s\n", r.Code, r.Message)
			}
			return exitUsage
		}
		return fail(e, "%v", err)
	}
	if res.Crash != nil {
		fmt.Fprintf(e.stderr, "subako-runner: %s: %s\n", res.Crash.Reason, res.Crash.Message)
		return exitTrap
	}
	return int(res.ExitCode & 0xff)
}

// runMounts lists run's preopens: --tmp, --data, --skills in the ABI
// order, then each --dir in the order given.
func runMounts(o *options) ([]fsmount.Mount, error) {
	layout := fsmount.Layout{Tmp: o.tmp, Data: o.data, Skills: o.skills}
	mounts, err := layout.Mounts()
	if err != nil {
		return nil, err
	}
	for _, d := range o.dirs {
		host, guest, err := parseDirFlag(d)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, fsmount.Mount{Guest: guest, Host: host})
	}
	for _, m := range mounts {
		if _, err := os.Stat(m.Host); err != nil {
			return nil, fmt.Errorf("cannot mount %s: %v", m.Host, err)
		}
	}
	return mounts, nil
}
