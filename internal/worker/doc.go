// Package worker runs code in worker processes and talks to them over one
// multiplexed channel each, so that a fault in what a worker runs (an
// engine bug, a runaway guest) costs that worker, never the process that
// embeds the pool. It is mechanism only: payloads are opaque bytes, and
// what a worker does with a stream is its handler's business.
//
// # Processes
//
// Start starts Config.Count processes of Config.Path, each with one end of
// a unix socketpair as descriptor 3 and ChannelEnv=3 in its environment.
// The worker finds it with Channel and calls Serve, which first sends a
// hello payload (Slot.Hello: a version, capabilities, whatever the parent
// wants to check). Each process leads its own process group, gets
// SIGKILL as its parent-death signal on linux (forked from one goroutine
// locked to its thread for the pool's life, since the signal follows the
// forking thread), has stdin and stdout on /dev/null, and stderr passed
// line by line to Config.Log at warn level (os.Stderr without a Log).
//
// # Supervision
//
// One goroutine per process waits for it. When it ends, for whatever
// reason, every stream open on it fails with the same *ExitError (Recv
// returns the messages that arrived before it first), Config.OnExit hears
// of it, and the slot starts a replacement at once, so the next Open finds
// it ready. Processes that keep dying within a second of their start, or
// fail to start, are retried with exponential backoff (up to 5 s), and
// Open returns that failure (a *StartError) instead of waiting.
//
// The parent kills a process (SIGKILL to its group) when:
//   - a stream with a deadline (Stream.SetDeadline) is still open at the
//     deadline plus Config.Grace: Reason ExitDeadline. One watchdog
//     goroutine per pool keeps every deadline in a heap behind one timer.
//   - its resident set passes Config.MemoryMax: Reason ExitMemory. The
//     watchdog reads /proc/<pid>/statm every 50 ms (linux; Pool.MemoryGuard
//     says "rss", or "none"). A cgroup limit would be exact; it is not
//     used, since it needs a delegated cgroup v2 tree we cannot count on.
//   - it breaks the channel's rules (a malformed frame, a message past
//     Config.MaxMessage, data past its credit): Reason ExitProtocol.
//   - it closed its channel without exiting within Grace: Reason
//     ExitCrashed, as for any process that dies on its own.
//
// Pool.Close closes the channels: Serve returns nil on EOF and the worker
// exits; Close waits for that, and SIGKILLs what is left when its ctx ends.
//
// # Frames
//
// Everything on the channel is a frame: a 16-byte little-endian header and
// up to 256 KiB of payload.
//
//	[0:4]   payload length, at most 256 KiB
//	[4]     type: 1 hello, 2 settings, 3 data, 4 window, 5 eof, 6 reset
//	[5]     flags: 1 = first chunk of a message (data)
//	[6:8]   zero
//	[8:12]  stream id; 0 for hello and settings
//	[12:16] data with flag 1: the message's total length; window: credit
//
// The worker's first frame is hello; the parent's is settings, whose aux
// is the largest message it accepts (the worker's Send refuses larger ones
// itself rather than getting killed). The parent opens a stream by sending
// its first data frame on the next id; the header of Slot.Open is that
// stream's first message. Messages are sent as chunks of at most 256 KiB,
// so a big message on one stream delays the others by one frame at most.
// eof is CloseSend. reset from the parent is Stream.Close (the worker's
// handler ctx is canceled); from the worker it says the handler returned,
// after its eof. Frames for a stream this side already let go of are
// dropped; a worker naming a stream never opened breaks the rules.
//
// Writers share one buffered writer under a lock; a writer flushes unless
// another is already waiting for the lock, so frames are batched under
// load and a lone round trip pays one write per direction.
//
// # Flow control
//
// Each stream has a 4 MiB window per direction: the sender spends credit
// with each data byte and waits at zero; the receiver gives credit back
// in 1 MiB lumps, at once while its reader keeps up (nothing queued before
// the arriving message), else as Recv drains the queue. So a receiver that
// does not read holds at most a window plus one message, the sender then
// waits on that stream alone, and the goroutine reading the channel never
// blocks: it only queues. (Control frames it wants sent go through a
// separate goroutine, so two readers never wait on each other's full
// socket.) A message larger than the window still flows, as long as the
// receiver is waiting for it.
package worker
