package worker

import (
	"context"
	"errors"
	"io"
	"os"
	"sync/atomic"
)

// Channel returns the worker's end of the channel when this process was
// started as a worker (ChannelEnv is "3").
func Channel() (*os.File, bool) {
	if os.Getenv(ChannelEnv) != "3" {
		return nil, false
	}
	return channelFile(3)
}

// Serve sends hello (at most 256 KiB), then runs handle on its own goroutine
// for every stream the parent opens, until the parent closes the channel
// (returns nil) or ctx ends (returns ctx.Err()). handle's ctx is canceled
// when the parent Closes the stream or the channel ends; when handle
// returns, the stream's CloseSend is sent if handle did not, and the stream
// is finished. Serve does not wait for handlers that ignore their ctx: a
// worker's main should exit once Serve returns.
func Serve(ctx context.Context, ch *os.File, hello []byte, handle func(ctx context.Context, header []byte, s *Stream)) error {
	if len(hello) > maxFrame {
		return errors.New("worker: hello larger than 256 KiB")
	}
	var spinners atomic.Int32
	c := newConn(ch, false, maxMessageLimit, &spinners)
	c.handle = handle
	base, cancel := context.WithCancel(ctx)
	defer cancel()
	c.baseCtx = base
	if err := c.writeFrame(frameHeader{typ: frameHello}, hello); err != nil {
		c.close()
		return err
	}
	go c.ctlLoop()
	stop := context.AfterFunc(ctx, c.close)
	defer stop()
	err := c.readLoop(nil)
	c.fail(ErrStreamClosed)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
