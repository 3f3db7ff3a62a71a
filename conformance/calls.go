package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/protocol"
	srt "github.com/subako/subako-runner/runtime"
)

// callRecord is one tools/call run through Package.Call, kept for the
// checks that look across calls (view, output schema).
type callRecord struct {
	probe string
	tool  string
	args  json.RawMessage
	res   *srt.Result
}

// call runs one tools/call as the host would in production (fresh
// /volume/tmp, no network, the call limits) and records it.
func (r *run) call(ctx context.Context, probe, tool string, args json.RawMessage) (*srt.Result, error) {
	return r.callWith(ctx, probe, srt.CallRequest{Tool: tool, Arguments: args})
}

// callWith is call with the request's network policy (an example's).
func (r *run) callWith(ctx context.Context, probe string, req srt.CallRequest) (*srt.Result, error) {
	tool, args := req.Tool, req.Arguments
	res, err := r.pkg.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	// The view is built inside Call; nothing here reads the files it
	// links to, so the call's /volume/tmp can go at once.
	res.Release()
	r.record(evidence{probe: probe, crash: res.Crash, stderr: crashStderr(res.Crash), profile: profileOf(res.Stats), call: true,
		bytesWritten: res.Stats.BytesWritten, httpRequests: res.Stats.HTTPRequests})
	r.mu.Lock()
	r.calls = append(r.calls, callRecord{probe: probe, tool: tool, args: args, res: res})
	r.mu.Unlock()
	return res, nil
}

// toolProbes registers the per-tool checks (and the examples) and returns
// the jobs that judge them.
func (r *run) toolProbes(ctx context.Context) []func() {
	var jobs []func()
	for _, t := range r.tools {
		tool, _ := r.pkg.Tool(t.Name)
		name := t.Name
		empty := r.add("tools.call_empty_args/"+name, 6, fmt.Sprintf("tools/call %s with {} gets a result, isError when the schema refuses {}", excerpt(name, 64)))
		invalid := r.add("tools.call_invalid_args/"+name, 6, fmt.Sprintf("tools/call %s with arguments its inputSchema refuses gets an isError result", excerpt(name, 64)))
		valid := r.add("tools.call_valid_args/"+name, 6, fmt.Sprintf("tools/call %s with arguments its inputSchema accepts gets a result", excerpt(name, 64)))
		var output *Check // judged in crossChecks, once every call of the tool (examples included) is done
		if tool.HasOutputSchema() {
			output = r.add("tools.output_schema/"+name, 6, fmt.Sprintf("structuredContent of %s validates against its outputSchema", excerpt(name, 64)))
			r.outputs = append(r.outputs, outputCheck{output, tool})
		}
		jobs = append(jobs, func() {
			res, err := r.call(ctx, empty.ID, name, json.RawMessage(`{}`))
			if err != nil {
				r.hostError(err)
				return
			}
			r.judgeBadArgs(empty, res, json.RawMessage(`{}`), "{}", tool.ValidateInput(json.RawMessage(`{}`)))
		})
		jobs = append(jobs, func() {
			args, why, err := invalidArguments(tool)
			switch {
			case err != nil:
				r.hostError(err)
				return
			case args == nil:
				invalid.set(Skip, "the inputSchema accepts every object tried (wrong types, an extra property): nothing to refuse")
				return
			}
			res, err := r.call(ctx, invalid.ID, name, args)
			if err != nil {
				r.hostError(err)
				return
			}
			r.judgeBadArgs(invalid, res, args, why, tool.ValidateInput(args))
		})
		jobs = append(jobs, func() {
			args, err := validArguments(tool)
			if err != nil {
				valid.set(Skip, "could not judge: %v; give example arguments with --examples", err)
				return
			}
			res, err := r.call(ctx, valid.ID, name, args)
			if err != nil {
				r.hostError(err)
				return
			}
			r.judgeValid(valid, res, args)
		})
	}
	for _, name := range sortedKeys(r.opts.Examples) {
		tool, ok := r.pkg.Tool(name)
		if !ok {
			c := r.add("examples."+name, 6, fmt.Sprintf("examples of %s", excerpt(name, 64)))
			c.set(Fail, "the examples name a tool the package does not list; its tools are: %s", toolNames(r.tools))
			continue
		}
		for i, args := range r.opts.Examples[name] {
			c := r.add(fmt.Sprintf("examples.%s/%d", name, i+1), 6, fmt.Sprintf("example %d of %s", i+1, excerpt(name, 64)))
			jobs = append(jobs, func() {
				res, err := r.callWith(ctx, c.ID, srt.CallRequest{Tool: name, Arguments: args, Network: r.opts.ExampleNetwork})
				if err != nil {
					r.hostError(err)
					return
				}
				r.judgeExample(c, tool, res, args)
			})
		}
	}
	return jobs
}

func resultText(res *srt.Result) string {
	var parts []string
	for _, v := range res.View {
		switch v.Type {
		case "text", "note", "link":
			parts = append(parts, v.Text)
		default:
			parts = append(parts, "["+v.Type+"]")
		}
	}
	return excerpt(strings.Join(parts, " "), 200)
}

func (r *run) crashDetail(what string, res *srt.Result) string {
	c := res.Crash
	d := fmt.Sprintf("%s: the module crashed (%s): %s", what, c.Reason, c.Message)
	if c.Reason == srt.CrashJSONRPCError {
		d += "\nUnder ABI 1 a JSON-RPC error is a crash: the model is told the function crashed. Answer with a result {\"content\": [{\"type\": \"text\", \"text\": \"<what is wrong>\"}], \"isError\": true} instead."
	}
	return d + stderrSuffix(c.Stderr)
}

// judgeBadArgs judges a call with {} or with generated invalid arguments.
// schemaErr is the inputSchema's verdict on the arguments (nil: valid).
func (r *run) judgeBadArgs(c *Check, res *srt.Result, args json.RawMessage, why string, schemaErr error) {
	c.Profile = profileOf(res.Stats)
	what := fmt.Sprintf("arguments %s (%s)", excerpt(string(args), 120), why)
	if string(args) == "{}" {
		what = "arguments {}"
	}
	switch res.Outcome {
	case srt.OutcomeCrashed:
		c.set(Fail, "%s", r.crashDetail(what, res))
	case srt.OutcomeToolError:
		c.set(Pass, "%s: isError result %q", what, resultText(res))
	default:
		if schemaErr == nil {
			c.set(Pass, "%s satisfy the inputSchema; answered %q", what, resultText(res))
			return
		}
		c.set(Warn, "%s break the inputSchema (%s), yet the module answered without isError: %q.\nThe host does not check arguments against the schema; validate them in the module and answer isError with what is wrong.",
			what, excerpt(text.FirstLine(schemaErr.Error()), 160), resultText(res))
	}
}

func (r *run) judgeValid(c *Check, res *srt.Result, args json.RawMessage) {
	c.Profile = profileOf(res.Stats)
	what := fmt.Sprintf("generated arguments %s", excerpt(string(args), 120))
	switch res.Outcome {
	case srt.OutcomeCrashed:
		c.set(Fail, "%s", r.crashDetail(what, res))
	case srt.OutcomeToolError:
		c.set(Pass, "%s: isError result %q (check runs without network and with an empty /volume/tmp; give real arguments with --examples)", what, resultText(res))
	default:
		c.set(Pass, "%s: answered %q", what, resultText(res))
	}
}

func (r *run) judgeExample(c *Check, tool *protocol.CompiledTool, res *srt.Result, args json.RawMessage) {
	c.Profile = profileOf(res.Stats)
	what := fmt.Sprintf("arguments %s", excerpt(string(args), 120))
	note := ""
	if err := tool.ValidateInput(args); err != nil {
		note = fmt.Sprintf(" (these arguments break the inputSchema: %s)", excerpt(text.FirstLine(err.Error()), 160))
	}
	switch res.Outcome {
	case srt.OutcomeCrashed:
		c.set(Fail, "%s%s", r.crashDetail(what, res), note)
	case srt.OutcomeToolError:
		c.set(Warn, "%s: isError result %q%s", what, resultText(res), note)
	default:
		c.set(Pass, "%s: answered %q%s", what, resultText(res), note)
	}
}

// unknownToolProbe calls a tool the module did not list. The host refuses
// such calls before running the module, so whatever the module does cannot
// break a call; but a JSON-RPC error, the SDKs' habit, is worth knowing.
func (r *run) unknownToolProbe(ctx context.Context) func() {
	name := unknownToolName
	for {
		if _, taken := r.pkg.Tool(name); !taken {
			break
		}
		name += "_"
	}
	return func() {
		c := r.fixed.toolsUnknownTool
		res := r.probe(ctx, c, []json.RawMessage{callRequest(protocol.StringID("subako-check-unknown"), name, nil)})
		if res == nil {
			return
		}
		c.Profile = profileOf(res.Stats)
		const never = "The host refuses calls of tools the module did not list before running it, so this never reaches the module in use."
		if len(res.Responses) == 0 {
			c.set(Warn, "tools/call %s: %s\n%s Still, answer an isError result rather than crash.%s", name, crashText(res.Crash), never, stderrSuffix(crashStderr(res.Crash)))
			return
		}
		msg := res.Responses[0]
		if msg.Kind == protocol.KindErrorResponse {
			c.set(Warn, "tools/call %s got JSON-RPC error %d %q. MCP SDKs answer so, but under ABI 1 a JSON-RPC error is a crash (jsonrpc_error). %s To be safe under any host, answer {\"content\": [{\"type\": \"text\", \"text\": \"unknown tool\"}], \"isError\": true}.",
				name, msg.Error.Code, excerpt(msg.Error.Message, 120), never)
			return
		}
		parsed, err := protocol.ParseCallToolResult(msg.Result)
		switch {
		case err != nil:
			c.set(Warn, "tools/call %s got a result that is not a CallToolResult: %v. %s", name, err, never)
		case !parsed.IsError:
			c.set(Warn, "tools/call %s (a tool the module never listed) got a result without isError. %s", name, never)
		default:
			c.set(Pass, "tools/call %s got an isError result", name)
		}
	}
}
