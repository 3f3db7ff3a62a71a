package protocol

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

type collected struct{ lines []string }

func (c *collected) on(line []byte) error {
	c.lines = append(c.lines, string(line))
	return nil
}

func feed(s *LineSplitter, chunks ...string) error {
	for _, c := range chunks {
		if _, err := s.Write([]byte(c)); err != nil {
			return err
		}
	}
	return s.Close()
}

func TestLineSplitterLines(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"one line", []string{"a\n"}, []string{"a"}},
		{"two lines one write", []string{"a\nb\n"}, []string{"a", "b"}},
		{"line across writes", []string{"ab", "c", "d\ne"}, []string{"abcd", "e"}},
		{"trailing partial line is delivered at Close", []string{"a\nlast"}, []string{"a", "last"}},
		{"blank lines are lines", []string{"\n\n"}, []string{"", ""}},
		{"CR kept", []string{"a\r\n"}, []string{"a\r"}},
		{"nothing", nil, nil},
		{"empty writes", []string{"", "a", "", "\n"}, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c collected
			if err := feed(NewLineSplitter(100, 1000, c.on), tt.chunks...); err != nil {
				t.Fatal(err)
			}
			if strings.Join(c.lines, "|") != strings.Join(tt.want, "|") || len(c.lines) != len(tt.want) {
				t.Errorf("lines = %q, want %q", c.lines, tt.want)
			}
		})
	}
}

func TestLineSplitterCaps(t *testing.T) {
	tests := []struct {
		name              string
		maxLine, maxTotal int64
		chunks            []string
		wantLines         []string
		wantErr           bool
	}{
		{"line exactly at the cap", 3, 0, []string{"abc\n"}, []string{"abc"}, false},
		{"line over the cap in one write", 3, 0, []string{"abcd\n"}, nil, true},
		{"line over the cap across writes", 3, 0, []string{"ab", "cd"}, nil, true},
		{"pending line over the cap without newline", 3, 0, []string{"a\nbcde"}, []string{"a"}, true},
		{"trailing partial at the cap", 3, 0, []string{"abc"}, []string{"abc"}, false},
		{"total exactly at the cap", 0, 4, []string{"a\nb\n"}, []string{"a", "b"}, false},
		{"total over the cap", 0, 4, []string{"a\nb\nc\n"}, []string{"a", "b"}, true},
		{"total over the cap across writes", 0, 4, []string{"a\n", "bc", "d"}, []string{"a"}, true},
		{"no limits", 0, 0, []string{strings.Repeat("x", 1<<16) + "\n"}, []string{strings.Repeat("x", 1<<16)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c collected
			err := feed(NewLineSplitter(tt.maxLine, tt.maxTotal, c.on), tt.chunks...)
			var pe *Error
			if tt.wantErr != (err != nil) {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && (!errors.As(err, &pe) || pe.Code != CodeOutputTooLarge) {
				t.Fatalf("err = %v, want output_too_large", err)
			}
			if strings.Join(c.lines, "|") != strings.Join(tt.wantLines, "|") {
				t.Errorf("lines = %q, want %q", c.lines, tt.wantLines)
			}
		})
	}
}

func TestLineSplitterDoesNotBufferAnEndlessLine(t *testing.T) {
	var c collected
	s := NewLineSplitter(1024, 0, c.on)
	chunk := bytes.Repeat([]byte("x"), 100)
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = s.Write(chunk)
		if cap(s.buf) > 2048 {
			t.Fatalf("buffer grew to %d bytes", cap(s.buf))
		}
	}
	if err == nil {
		t.Fatal("no error for a 100 KB line with a 1 KiB cap")
	}
	if _, err2 := s.Write([]byte("\n")); err2 != err {
		t.Errorf("error is not sticky: %v", err2)
	}
	if s.Close() != err {
		t.Error("Close does not return the sticky error")
	}
}

func TestLineSplitterStopsOnCallbackError(t *testing.T) {
	stop := errors.New("stop")
	var got []string
	s := NewLineSplitter(0, 0, func(l []byte) error {
		got = append(got, string(l))
		if string(l) == "b" {
			return stop
		}
		return nil
	})
	n, err := s.Write([]byte("a\nb\nc\n"))
	if err != stop || n != 4 {
		t.Fatalf("Write = %d, %v; want 4, stop", n, err)
	}
	if _, err := s.Write([]byte("d\n")); err != stop {
		t.Errorf("later Write = %v", err)
	}
	if strings.Join(got, ",") != "a,b" {
		t.Errorf("lines = %q", got)
	}
	if s.Lines() != 2 {
		t.Errorf("Lines() = %d", s.Lines())
	}
}

func FuzzLineSplitter(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), []byte{1, 2, 3})
	f.Add([]byte("{\"jsonrpc\":\"2.0\"}\n"), []byte{0})
	f.Add([]byte("\n\n\n"), []byte{1, 1})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		want := bytes.Split(data, []byte("\n"))
		if len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1] // a final "\n" ends the last line; nothing follows
		}
		var got [][]byte
		s := NewLineSplitter(0, 0, func(l []byte) error {
			got = append(got, bytes.Clone(l))
			return nil
		})
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if i < len(cuts) {
				n = min(int(cuts[i]), len(rest))
			}
			if w, err := s.Write(rest[:n]); err != nil || w != n {
				t.Fatalf("Write = %d, %v", w, err)
			}
			rest = rest[n:]
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("got %d lines, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("line %d = %q, want %q", i, got[i], want[i])
			}
		}
		// The same data under a line cap: an error exactly when some line is too long.
		const maxLine = 4
		tooLong := false
		for _, l := range want {
			tooLong = tooLong || len(l) > maxLine
		}
		s2 := NewLineSplitter(maxLine, 0, func([]byte) error { return nil })
		_, err := s2.Write(data)
		if err == nil {
			err = s2.Close()
		}
		if (err != nil) != tooLong {
			t.Fatalf("cap %d: err = %v, a line too long = %v", maxLine, err, tooLong)
		}
	})
}

func BenchmarkLineSplitter(b *testing.B) {
	line := append(bytes.Repeat([]byte("x"), 200), '\n')
	data := bytes.Repeat(line, 1000)
	s := NewLineSplitter(1<<24, 0, func([]byte) error { return nil })
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for off := 0; off < len(data); off += 4096 {
			s.Write(data[off:min(off+4096, len(data))])
		}
	}
}
