package main

import (
	"strings"
	"testing"
	"time"

	"github.com/subako/subako-runner/limits"
)

// TestDefaultsInHelpReadBack: the defaults the limit flags' help names are
// written so the flags read them back as limits.Default's values, and the
// help shows them.
func TestDefaultsInHelpReadBack(t *testing.T) {
	for _, n := range []uint64{0, 1, 999, 1000, 1500, limits.DefaultFuel, 10_000_000_000_000, 123_000_000} {
		var v fuelValue
		if err := v.Set(formatFuel(n)); err != nil || v.n != n {
			t.Errorf("formatFuel(%d) = %q, read back as %d (%v)", n, formatFuel(n), v.n, err)
		}
	}
	if got := formatFuel(limits.DefaultFuel); got != "1e11" {
		t.Errorf("formatFuel(DefaultFuel) = %q, want 1e11", got)
	}
	for _, d := range []time.Duration{10 * time.Second, 60 * time.Second, 1500 * time.Millisecond, 5 * time.Minute} {
		var v durationValue
		if err := v.Set(formatSeconds(d)); err != nil || v.d != d {
			t.Errorf("formatSeconds(%v) = %q, read back as %v (%v)", d, formatSeconds(d), v.d, err)
		}
	}

	def := limits.Default()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"call", "--help"}, []string{"(default " + limits.FormatSize(def.Memory) + ")", "(default " + formatFuel(def.Fuel) + ")", "(default " + formatSeconds(def.CallTimeout) + ")"}},
		{[]string{"discover", "--help"}, []string{"(default " + formatSeconds(def.DiscoveryTimeout) + ", as at upload)"}},
	} {
		var out strings.Builder
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &out, getenv: func(string) string { return "" }}
		if code := mainWith(t.Context(), e, tt.args); code != exitOK {
			t.Fatalf("%v: exit %d\n%s", tt.args, code, out.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v does not say %q", tt.args, w)
			}
		}
	}
}
