package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/runtime"
)

// runFlags are run's own flags besides the host, limit and network ones.
type runFlags struct {
	tmp, data, skills string
	dirs              []string
	envs              []string
	relativeDir       bool // a --dir had a relative guest path
}

func newRunCmd(a *app) *cobra.Command {
	var h hostFlags
	var l limitFlags
	var n networkFlags
	var r runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] MODULE [ARG...]",
		Short: "run a module as a plain WASI preview 1 command (with subako_http)",
		Long: "Run MODULE as a plain WASI preview 1 command under the subako host (our WASI layer,\n" +
			"subako_http, the limits), with stdin, stdout and stderr passed through. The exit\n" +
			"status is the module's; a trap or running out of memory, fuel or time exits 134.\n" +
			"Only the directories named by --tmp, --data, --skills and --dir are preopened, in\n" +
			"that order. Flags end at MODULE: what follows is the module's argv.",
		Args:        positionals([]string{"MODULE"}, 1, -1),
		Annotations: map[string]string{stopAtFirstArg: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			mounts, err := runMounts(&r)
			if err != nil {
				return usageErr(cmd, "%v", err)
			}
			for _, kv := range r.envs {
				if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
					return usageErr(cmd, "--env %q: want NAME=VALUE", kv)
				}
			}
			policy, err := n.policy(a.e)
			if err != nil {
				return usageErr(cmd, "%v", err)
			}
			lim, err := l.limits()
			if err != nil {
				return usageErr(cmd, "%v", err)
			}
			for _, m := range mounts {
				if m.ReadOnly {
					h.readOnly = append(h.readOnly, m.Host)
				} else {
					h.readWrite = append(h.readWrite, m.Host)
				}
			}
			rt, closeRT, err := h.openRuntime(a.ctx, a.e, lim, args[0])
			if pe := (*fs.PathError)(nil); errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe) && pe.Path == args[0] {
				return status(fail(a.e, "%s: no such module (nothing at that path)", args[0]))
			}
			if err != nil {
				return status(startFailed(a.ctx, a.e, err))
			}
			defer closeRT()
			env := r.envs
			if r.relativeDir && !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PWD=") }) {
				env = append(slices.Clip(env), "PWD=/")
			}
			argv := append([]string{filepath.Base(args[0])}, args[1:]...)
			return status(runModule(a.ctx, a.e, rt, args[0], runtime.Command{
				Args: argv, Env: env, Mounts: mounts, Stdin: a.e.stdin, Stdout: a.e.stdout, Stderr: a.e.stderr,
				Network: policy, Limits: &lim,
			}))
		},
	}
	cmd.Flags().SetInterspersed(false)
	h.register(cmd, false)
	l.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&r.tmp, "tmp", "", "mount `DIR` as /volume/tmp")
	fs.StringVar(&r.data, "data", "", "mount `DIR` as /volume/data")
	fs.StringVar(&r.skills, "skills", "", "mount `DIR` at /skills and each subdirectory at /skills/<name>")
	fs.Var(&repeated{&r.dirs, "HOST[::GUEST]"}, "dir", "an extra read-write preopen, like wasmtime run --dir; repeatable")
	fs.Var(&repeated{&r.envs, "NAME=VALUE"}, "env", "an environment variable for the module; repeatable")
	n.register(cmd)
	return cmd
}

func runModule(ctx context.Context, e *env, rt *runtime.Runtime, module string, c runtime.Command) int {
	res, err := rt.RunCommand(ctx, module, c)
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
		if line, ok := workerErrorText(err); ok {
			return fail(e, "%s", line)
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
func runMounts(r *runFlags) ([]fsmount.Mount, error) {
	layout := fsmount.Layout{Tmp: r.tmp, Data: r.data, Skills: r.skills}
	mounts, err := layout.Mounts()
	if err != nil {
		return nil, err
	}
	for _, d := range r.dirs {
		host, guest, relative, err := parseDirFlag(d)
		if err != nil {
			return nil, err
		}
		r.relativeDir = r.relativeDir || relative
		mounts = append(mounts, fsmount.Mount{Guest: guest, Host: host})
	}
	for _, m := range mounts {
		if _, err := os.Stat(m.Host); err != nil {
			return nil, fmt.Errorf("cannot mount %s: %v", m.Host, err)
		}
	}
	return mounts, nil
}
