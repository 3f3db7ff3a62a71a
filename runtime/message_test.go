package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/internal/instance"
)

// A crash message quotes what the guest sent cut short, on a UTF-8
// boundary: a 15 MiB id, method or error message (of two-byte
// characters) does not end up in Crash.Message (issue 11, item 8).
func TestCrashMessagesQuoteTheGuestBounded(t *testing.T) {
	t.Parallel()
	heavy(t) // three 15 MiB lines through fd_write
	rt := newRuntime(t, nil)
	pkg := load(t, rt, makePackage(t, testguest.Go(t, guests+"misbehave"), nil))
	for _, tt := range []struct{ tool, crash string }{
		{"huge_id", CrashUnexpectedID},
		{"huge_method", CrashServerRequest},
		{"huge_error_message", CrashJSONRPCError},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			res := call(t, pkg, CallRequest{Tool: tt.tool})
			if res.Crash == nil || res.Crash.Reason != tt.crash {
				t.Fatalf("outcome %s crash %+v; want %s", res.Outcome, res.Crash, tt.crash)
			}
			msg := res.Crash.Message
			if len(msg) > instance.MaxCrashMessage+64 {
				t.Errorf("Crash.Message is %d bytes; want it bounded (%d)", len(msg), instance.MaxCrashMessage)
			}
			if !utf8.ValidString(msg) {
				t.Errorf("Crash.Message is cut inside a character: %q", msg[max(0, len(msg)-80):])
			}
			if !strings.Contains(msg, "éé") || !strings.Contains(msg, "…") {
				t.Errorf("Crash.Message should quote the start of what the guest sent, with an ellipsis: %.300q", msg)
			}
		})
	}
}

// RunCommand refuses a module that imports what the host does not provide
// with a *LinkError naming every such import, before anything runs: not a
// trap (issue 11, item 9).
func TestRunCommandModuleThatDoesNotLink(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	res, err := rt.RunCommand(context.Background(), "../testdata/checks/unknown_import.wasm", Command{})
	var link *LinkError
	if !errors.As(err, &link) {
		t.Fatalf("RunCommand: %+v, %v; want a *LinkError", res, err)
	}
	var names []string
	for _, p := range link.Problems {
		if p.Code != CodeUnknownImport {
			t.Errorf("problem %+v; want unknown_import", p)
		}
		names = append(names, p.Message)
	}
	all := strings.Join(names, "\n")
	for _, want := range []string{`"env"."foo"`, `"wasi_unstable"."fd_write"`, `"sock_open"`} {
		if !strings.Contains(all, want) {
			t.Errorf("the link error does not name %s:\n%s", want, all)
		}
	}
}
