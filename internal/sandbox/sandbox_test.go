package sandbox

import (
	"strings"
	"testing"
)

func TestReportComplete(t *testing.T) {
	full := Report{NoNewPrivs: true, Seccomp: true, SeccompSyscalls: 138, Landlock: 7, LandlockNet: true, Rlimits: true}
	for _, tc := range []struct {
		name string
		edit func(*Report)
		want bool
	}{
		{"all layers", func(*Report) {}, true},
		{"no seccomp", func(r *Report) { r.Seccomp = false }, false},
		{"no landlock", func(r *Report) { r.Landlock, r.LandlockNet = 0, false }, false},
		{"landlock without net", func(r *Report) { r.Landlock, r.LandlockNet = 3, false }, false},
		{"no no_new_privs", func(r *Report) { r.NoNewPrivs = false }, false},
		{"no rlimits", func(r *Report) { r.Rlimits = false }, false},
		{"a missing line", func(r *Report) { r.Missing = []string{"seccomp: why"} }, false},
		{"nothing", func(r *Report) { *r = Report{} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := full
			tc.edit(&r)
			if got := r.Complete(); got != tc.want {
				t.Errorf("Complete() = %v, want %v for %+v", got, tc.want, r)
			}
		})
	}
}

func TestReportString(t *testing.T) {
	r := Report{NoNewPrivs: true, Landlock: 3, Missing: []string{"seccomp: no kernel support"}}
	s := r.String()
	for _, want := range []string{"no_new_privs=on", "landlock=on(abi 3)", "landlock_net=off", "seccomp=off", "missing: seccomp: no kernel support"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, lacks %q", s, want)
		}
	}
}
