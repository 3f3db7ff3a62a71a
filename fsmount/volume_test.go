package fsmount

import (
	"strings"
	"testing"
)

// TestCheckVolumePath pins both sides of each boundary of the volume-path
// rule that subako_http and the runtime's view share.
func TestCheckVolumePath(t *testing.T) {
	tests := []struct {
		path string
		why  string // "" when accepted
	}{
		{"/volume/tmp/a", ""},
		{"/volume/data/a/b.txt", ""},
		{"/volume/tmp/...", ""}, // three dots is a name
		{"/volume/tmp/.a", ""},
		{"/volume/tmp/a..b", ""},
		{"volume/tmp/a", "is not absolute"},
		{"", "is not absolute"},
		{"/volume/tmp/a\x00b", "contains a NUL byte"},
		{"/volume/tmp", "is not under"}, // the mount itself is not a file in it
		{"/volume/tmp/", "is not in clean form"},
		{"/volume/tmp/a/", "is not in clean form"},
		{"/volume/tmp//a", "is not in clean form"},
		{"/volume/tmp/./a", "is not in clean form"},
		{"/volume/tmp/../data/a", "is not in clean form"},
		{"/volume/tmp/a/..", "is not in clean form"},
		{"/volume/tmpx/a", "is not under"},
		{"/volume/datas/a", "is not under"},
		{"/volume/a", "is not under"},
		{"/package/a", "is not under"},
		{"/skills/s/a", "is not under"},
		{"/etc/passwd", "is not under"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			err := CheckVolumePath(tt.path)
			switch {
			case tt.why == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.why != "" && err == nil:
				t.Fatalf("accepted, want %q", tt.why)
			case tt.why != "" && !strings.Contains(err.Error(), tt.why):
				t.Fatalf("error %q, want it to say %q", err, tt.why)
			}
		})
	}
}

// TestCheckVolumePathQuotesBounded: a hostile path does not make the
// message long.
func TestCheckVolumePathQuotesBounded(t *testing.T) {
	err := CheckVolumePath("/etc/" + strings.Repeat("x", 1<<20))
	if err == nil || len(err.Error()) > 300 {
		t.Fatalf("err = %.400v", err)
	}
}
