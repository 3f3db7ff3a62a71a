package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// spec is one test's expectations, in the operation form of the suite's
// doc/specification.md; a legacy spec (args, root, env, exit_code, stdout,
// stderr) is converted to it, as the suite's own runner does.
type spec struct {
	Args     []string
	Env      map[string]string
	Root     string // relative to the test's directory; "" is no preopen
	ExitCode int
	Stdout   string // expected prefix of stdout, as the suite's `read` checks
	Stderr   string
}

// operation is one entry of "operations".
type operation struct {
	Type     string            `json:"type"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	Root     *string           `json:"root"`
	ExitCode *int              `json:"exit_code"`
	ID       string            `json:"id"`
	Payload  string            `json:"payload"`
}

type rawSpec struct {
	Args       []string          `json:"args"`
	Env        map[string]string `json:"env"`
	Root       *string           `json:"root"`
	ExitCode   *int              `json:"exit_code"`
	Stdout     string            `json:"stdout"`
	Stderr     string            `json:"stderr"`
	Proposals  []string          `json:"proposals"`
	Operations []operation       `json:"operations"`
}

// readSpec reads the .json beside a test; a missing file is the default
// spec (no arguments, exit code 0).
func readSpec(path string) (spec, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return spec{}, nil
	}
	if err != nil {
		return spec{}, err
	}
	return parseSpec(b)
}

// parseSpec accepts the legacy and the operation forms; operations this
// driver cannot perform (sockets, HTTP) and proposals are errors, so a test
// needing them is counted as failed rather than passed unchecked.
func parseSpec(b []byte) (spec, error) {
	var r rawSpec
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&r); err != nil {
		return spec{}, fmt.Errorf("bad spec: %v", err)
	}
	if len(r.Proposals) > 0 {
		return spec{}, fmt.Errorf("needs proposals %v", r.Proposals)
	}
	if r.Operations == nil {
		s := spec{Args: r.Args, Env: r.Env, Stdout: r.Stdout, Stderr: r.Stderr}
		if r.Root != nil {
			s.Root = *r.Root
		}
		if r.ExitCode != nil {
			s.ExitCode = *r.ExitCode
		}
		return s, nil
	}
	var s spec
	ran, waited := false, false
	for _, op := range r.Operations {
		switch op.Type {
		case "run":
			if ran {
				return spec{}, fmt.Errorf("more than one run operation")
			}
			ran = true
			s.Args, s.Env = op.Args, op.Env
			if op.Root != nil {
				s.Root = *op.Root
			}
		case "read":
			if !ran {
				return spec{}, fmt.Errorf("read before run")
			}
			switch op.ID {
			case "", "stdout":
				s.Stdout += op.Payload
			case "stderr":
				s.Stderr += op.Payload
			default:
				return spec{}, fmt.Errorf("read of stream %q", op.ID)
			}
		case "wait":
			if !ran {
				return spec{}, fmt.Errorf("wait before run")
			}
			waited = true
			if op.ExitCode != nil {
				s.ExitCode = *op.ExitCode
			}
		default:
			return spec{}, fmt.Errorf("unsupported operation %q", op.Type)
		}
	}
	if !ran || !waited {
		return spec{}, fmt.Errorf("operations need one run and one wait")
	}
	return s, nil
}

// argv is the command line of `subako-runner run` for a test whose root
// (if any) is at hostRoot.
func (s spec) argv(runner []string, wasm, hostRoot string) []string {
	argv := append([]string{}, runner...)
	argv = append(argv, "run")
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		argv = append(argv, "--env", k+"="+s.Env[k])
	}
	if hostRoot != "" {
		argv = append(argv, "--dir", hostRoot+"::/")
	}
	argv = append(argv, "--", wasm)
	return append(argv, s.Args...)
}
