package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/subako/subako-runner/runtime"
)

// app is what every command's constructor receives: the context and the
// process's streams.
type app struct {
	ctx context.Context
	e   *env
}

func newRootCmd(ctx context.Context, e *env) *cobra.Command {
	a := &app{ctx: ctx, e: e}
	root := &cobra.Command{
		Use:           "subako-runner",
		Short:         "the host of Subako ABI 1 packages (WASI preview 1 MCP servers)",
		Long:          "subako-runner — the host of Subako ABI 1 packages (WASI preview 1 MCP servers).\n\n" + exitHelp(),
		Version:       runtime.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		// A bare subako-runner is a usage error: the help goes to stderr
		// and the status is 2, as go and git do.
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(e.stderr)
			cmd.Help()
			return exitStatus(exitUsage)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				msg := fmt.Sprintf("unknown command %q", args[0])
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					msg += fmt.Sprintf(" (did you mean %s?)", s[0])
				}
				return &usageError{cmd: cmd.CommandPath(), msg: msg}
			}
			return nil
		},
	}
	root.SetVersionTemplate(versionBanner())
	root.Flags().BoolP("version", "v", false, "print the version, ABI and MCP revision (as the version command)")
	root.SuggestionsMinimumDistance = 2
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetIn(e.stdin)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{cmd: cmd.CommandPath(), msg: flagErrorText(err) + flagSuggestion(cmd, err)}
	})
	root.CompletionOptions.HiddenDefaultCmd = false
	for _, newCmd := range commandConstructors() {
		root.AddCommand(newCmd(a))
	}
	root.SetHelpCommand(newHelpCmd(root))
	setUpCompletion(root)
	return root
}

// newHelpCmd is `help [COMMAND]`: cobra's prints the top-level help with
// exit status 0 for a topic it does not know; ours says so, exit 2.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "print the help of a command",
		Args:  cobra.ArbitraryArgs,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var out []cobra.Completion
			if len(args) == 0 {
				for _, c := range root.Commands() {
					if c.IsAvailableCommand() && strings.HasPrefix(c.Name(), toComplete) {
						out = append(out, cobra.CompletionWithDesc(c.Name(), c.Short))
					}
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 || (target == root && len(args) > 0) {
				return &usageError{cmd: root.CommandPath(), msg: fmt.Sprintf("help: no command %q", strings.Join(args, " "))}
			}
			target.InitDefaultHelpFlag() // so the help lists -h, --help as COMMAND --help does
			return target.Help()
		},
	}
}

// setUpCompletion makes cobra's completion command ours: lowercase like
// the others, and an unknown shell a usage error.
func setUpCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Short = "print the shell completion script: bash, zsh, fish or powershell"
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr(cmd, "completion: missing SHELL (bash, zsh, fish or powershell)")
			}
			return usageErr(cmd, "completion: unknown shell %q (bash, zsh, fish or powershell)", args[0])
		}
	}
}

// flagErrorText rewrites pflag's message for a bad value to name the
// flag as it is written: `invalid argument "x" for "--memory" flag: why`
// (or for "-q, --quiet") becomes `--memory "x": why`.
func flagErrorText(err error) string {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "invalid argument ")
	if !ok {
		return msg
	}
	var val, name string
	if n, _ := fmt.Sscanf(rest, "%q for %q flag: ", &val, &name); n != 2 {
		return msg
	}
	_, why, ok := strings.Cut(rest, " flag: ")
	if !ok {
		return msg
	}
	if i := strings.LastIndex(name, " "); i >= 0 {
		name = name[i+1:] // "-q, --quiet" → "--quiet"
	}
	return fmt.Sprintf("%s %q: %s", name, val, why)
}

// positionals checks the positional arguments against the names in the
// command's usage, so the error says which is missing or extra.
func positionals(names []string, min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < min:
			return &usageError{cmd: cmd.CommandPath(), msg: fmt.Sprintf("%s: missing %s", cmd.Name(), strings.Join(names[len(args):min], " and "))}
		case max >= 0 && len(args) > max:
			return &usageError{cmd: cmd.CommandPath(), msg: fmt.Sprintf("%s: unexpected argument %q (it takes %s)", cmd.Name(), args[max], argList(names))}
		}
		return nil
	}
}

func argList(names []string) string {
	if len(names) == 0 {
		return "no arguments"
	}
	return strings.Join(names, " ")
}

// normalizeArgs prepares the words for pflag, in two ways.
//
// A flag whose value is optional (--allow-private) takes its value from
// the next word, as help shows it, although pflag takes an optional value
// only after "=": the next word is joined when the flag's value accepts it
// (for --allow-private: it parses as a CIDR list), otherwise it stays a
// positional argument.
//
// A long flag written with one dash (-json, -memory=1g), which the
// command line before cobra accepted, is given its second dash.
//
// Words after "--", and for commands whose flags end at the first
// positional argument (run), words after it, are left alone.
func normalizeArgs(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == root {
		return args
	}
	fs := cmd.Flags()
	fs.AddFlagSet(cmd.InheritedFlags())
	out := make([]string, 0, len(args))
	seenCmd := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "="); len(name) > 1 && a[0] == '-' && !strings.HasPrefix(a, "--") && fs.Lookup(name) != nil {
			a = "-" + a
		}
		out = append(out, a)
		switch {
		case a == "--":
			return append(out, args[i+1:]...)
		case !seenCmd && a == cmd.Name():
			seenCmd = true
		case strings.HasPrefix(a, "--") && !strings.Contains(a, "="):
			f := fs.Lookup(a[2:])
			if f == nil {
				continue
			}
			if f.NoOptDefVal == "" {
				i++ // the value
				if i < len(args) {
					out = append(out, args[i])
				}
				continue
			}
			if opt, ok := f.Value.(optionalValue); ok && i+1 < len(args) && opt.acceptsWord(args[i+1]) {
				out[len(out)-1] = a + "=" + args[i+1]
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) == 2:
			if f := fs.ShorthandLookup(a[1:]); f != nil && f.NoOptDefVal == "" {
				i++
				if i < len(args) {
					out = append(out, args[i])
				}
			}
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			if seenCmd && cmd.Annotations[stopAtFirstArg] == "true" {
				return append(out, args[i+1:]...)
			}
		}
	}
	return out
}

// stopAtFirstArg is the annotation of a command whose flags end at its
// first positional argument (run: the rest is the module's argv).
const stopAtFirstArg = "subako-runner/stop-at-first-arg"

// optionalValue is a flag value that may stand alone and says whether the
// next word is its value.
type optionalValue interface {
	pflag.Value
	acceptsWord(string) bool
}
