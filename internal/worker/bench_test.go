package worker

import (
	"context"
	"io"
	"os"
	"testing"
)

func BenchmarkRoundTrip(b *testing.B) {
	p := startPool(b, testConfig(""))
	st := open(b, p.Slot(0), "echo")
	defer st.Close()
	msg := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if err := st.Send(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRoundTripParallel(b *testing.B) {
	cfg := testConfig("")
	cfg.Count = 2
	p := startPool(b, cfg)
	msg := make([]byte, 64)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		st := open(b, p.Slot(0), "echo")
		defer st.Close()
		for pb.Next() {
			if err := st.Send(msg); err != nil {
				b.Error(err)
				return
			}
			if _, err := st.Recv(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkOpenRoundTrip is one call as the runtime makes it: open a
// stream with a header, one message each way, close.
func BenchmarkOpenRoundTrip(b *testing.B) {
	p := startPool(b, testConfig(""))
	s := p.Slot(0)
	msg := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		st, _, err := s.Open(context.Background(), []byte("echo"))
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Send(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			b.Fatal(err)
		}
		st.Close()
	}
}

func BenchmarkBigMessage(b *testing.B) {
	p := startPool(b, testConfig(""))
	st := open(b, p.Slot(0), "echo")
	defer st.Close()
	msg := make([]byte, 16<<20)
	b.SetBytes(int64(2 * len(msg)))
	for b.Loop() {
		go st.Send(msg)
		if _, err := st.Recv(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStart is the time from Start to a worker's hello (plus Close).
func BenchmarkStart(b *testing.B) {
	cfg := testConfig("")
	for b.Loop() {
		p, err := Start(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		p.Close(context.Background())
	}
}

// BenchmarkRawPingPong is the floor under BenchmarkRoundTrip: 64 bytes
// each way on the bare socketpair, between the same two processes.
func BenchmarkRawPingPong(b *testing.B) {
	cfg := testConfig("raw")
	cmd, f, err := startProcess(cfg.Path, cfg.Args, append(cfg.Env, ChannelEnv+"=3"), os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { f.Close(); cmd.Wait() }()
	msg := make([]byte, 64)
	buf := make([]byte, 64)
	for b.Loop() {
		if _, err := f.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(f, buf); err != nil {
			b.Fatal(err)
		}
	}
}
