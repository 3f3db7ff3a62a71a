package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/tetratelabs/wazero"
	"golang.org/x/sys/unix"
)

// The tests run the sandbox in a re-executed copy of the test binary (it
// cannot be undone in the test process itself). The child is told what to
// do through these variables and answers with one resultPrefix line.
const (
	envChild     = "SUBAKO_SANDBOX_TEST_CHILD"
	envRO        = "SUBAKO_SANDBOX_TEST_RO"
	envRW        = "SUBAKO_SANDBOX_TEST_RW"
	envAddr      = "SUBAKO_SANDBOX_TEST_ADDR"
	resultPrefix = "SANDBOX-RESULT "
	enteredLine  = "SANDBOX-ENTERED"
	childFiles   = 64 // MaxFiles the children ask for
)

// childResult is what a child reports.
type childResult struct {
	Report  Report
	EnterNS int64
	Checks  map[string]string // check name -> "ok" or the errno's name
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// outcome names an error the way the tests compare it.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return "error: " + err.Error()
}

func runChild(mode string) int {
	ro, rw := os.Getenv(envRO), os.Getenv(envRW)
	cfg := Config{ReadOnly: []string{ro}, ReadWrite: []string{rw}, MaxFiles: childFiles}
	switch mode {
	case "nolandlock":
		cfg.skipLandlock = true
	case "noseccomp":
		cfg.skipSeccomp = true
	}

	// Threads that exist before Enter, each pinned to its goroutine, so
	// the checks below run on OS threads that Enter itself did not run on.
	const pinned = 8
	start := make(chan struct{})
	type threadResult struct{ open, socket, nnp string }
	threadResults := make(chan threadResult, pinned)
	ready := make(chan struct{}, pinned)
	for range pinned {
		go func() {
			runtime.LockOSThread()
			ready <- struct{}{}
			<-start
			f, err := os.Open("/etc/passwd")
			if err == nil {
				f.Close()
			}
			fd, serr := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
			if serr == nil {
				syscall.Close(fd)
			}
			nnp, nerr := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
			if nerr == nil && nnp != 1 {
				nerr = fmt.Errorf("no_new_privs %d", nnp)
			}
			threadResults <- threadResult{outcome(err), outcome(serr), outcome(nerr)}
		}()
	}
	for range pinned {
		<-ready
	}

	t0 := time.Now()
	rep, err := Enter(cfg)
	enterNS := time.Since(t0).Nanoseconds()
	if err != nil {
		fmt.Println("Enter:", err)
		return 2
	}
	fmt.Println(enteredLine)

	switch mode {
	case "kill-ptrace":
		_, _, e := syscall.RawSyscall(syscall.SYS_PTRACE, syscall.PTRACE_TRACEME, 0, 0)
		fmt.Println("ptrace returned", e)
		return 3
	case "kill-unshare":
		err := syscall.Unshare(syscall.CLONE_NEWUSER)
		fmt.Println("unshare returned", err)
		return 3
	case "bench":
		out, _ := json.Marshal(childResult{Report: rep, EnterNS: enterNS})
		fmt.Println(resultPrefix + string(out))
		return 0
	}

	checks := map[string]string{}
	check := func(name string, f func() error) { checks[name] = outcome(f()) }

	close(start)
	var threadOpen, threadSocket, threadNNP []string
	for range pinned {
		r := <-threadResults
		threadOpen = append(threadOpen, r.open)
		threadSocket = append(threadSocket, r.socket)
		threadNNP = append(threadNNP, r.nnp)
	}
	checks["threads/open_etc_passwd"] = same(threadOpen)
	checks["threads/socket"] = same(threadSocket)
	checks["threads/no_new_privs"] = same(threadNNP)
	// The pinned threads ended with their goroutines (they exit still
	// locked), so these run on threads started after Enter, which must
	// inherit every layer.
	check("new_threads", func() error {
		var wg sync.WaitGroup
		hold := make(chan struct{})
		results := make(chan string, pinned)
		for range pinned {
			wg.Go(func() {
				runtime.LockOSThread()
				f, err := os.Open("/etc/passwd")
				if err == nil {
					f.Close()
				}
				fd, serr := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
				if serr == nil {
					syscall.Close(fd)
				}
				results <- outcome(err) + "/" + outcome(serr)
				<-hold // every goroutine keeps its own thread
			})
		}
		var got []string
		for range pinned {
			got = append(got, <-results)
		}
		close(hold)
		wg.Wait()
		if o := same(got); o != "EACCES/EPERM" {
			return errors.New(o)
		}
		return nil
	})

	// Work a worker does.
	a, sub := filepath.Join(rw, "a"), filepath.Join(rw, "sub")
	check("rw/create_write", func() error { return os.WriteFile(a, []byte("hello"), 0o600) })
	check("rw/mkdir", func() error { return os.Mkdir(sub, 0o700) })
	check("rw/rename_across_dirs", func() error { return os.Rename(a, filepath.Join(sub, "b")) })
	check("rw/read", func() error {
		b, err := os.ReadFile(filepath.Join(sub, "b"))
		if err == nil && string(b) != "hello" {
			return fmt.Errorf("read %q", b)
		}
		return err
	})
	check("rw/truncate", func() error { return os.Truncate(filepath.Join(sub, "b"), 1) })
	check("rw/symlink", func() error { return os.Symlink("b", filepath.Join(sub, "l")) })
	check("rw/chtimes", func() error { return os.Chtimes(filepath.Join(sub, "b"), time.Unix(1, 0), time.Unix(1, 0)) })
	check("rw/remove", func() error { return os.RemoveAll(sub) })
	check("ro/read", func() error { _, err := os.ReadFile(filepath.Join(ro, "data")); return err })
	check("ro/list", func() error { _, err := os.ReadDir(ro); return err })
	check("goroutines", func() error {
		var wg sync.WaitGroup
		var mu sync.Mutex
		sum := 0
		for i := range 100 {
			wg.Go(func() {
				time.Sleep(time.Millisecond)
				mu.Lock()
				sum += i
				mu.Unlock()
			})
		}
		wg.Wait()
		if sum != 4950 {
			return fmt.Errorf("sum %d", sum)
		}
		return nil
	})
	check("gc", func() error {
		garbage := make([][]byte, 0, 1000)
		for range 1000 {
			garbage = append(garbage, make([]byte, 64<<10))
		}
		runtime.KeepAlive(garbage)
		runtime.GC()
		return nil
	})
	check("sleep_and_timer", func() error {
		time.Sleep(time.Millisecond)
		<-time.After(time.Millisecond)
		return nil
	})
	check("pipe", func() error {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer r.Close()
		go func() { w.Write([]byte("ping")); w.Close() }()
		b, err := io.ReadAll(r)
		if err == nil && string(b) != "ping" {
			return fmt.Errorf("read %q", b)
		}
		return err
	})
	check("mmap_exec", func() error {
		// What wazero does with the machine code it compiles.
		m, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			return err
		}
		defer unix.Munmap(m)
		return unix.Mprotect(m, unix.PROT_READ|unix.PROT_EXEC)
	})
	check("wazero_compile_and_call", func() error { return runWasm(filepath.Join(rw, "cache")) })
	check("channel_fd3", func() error {
		c, err := net.FileConn(os.NewFile(3, "channel"))
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte("from the sandbox")); err != nil {
			return err
		}
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		if err == nil && string(buf[:n]) != "from the parent" {
			return fmt.Errorf("read %q", buf[:n])
		}
		return err
	})
	check("rlimit_nofile", func() error {
		var l unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
			return err
		}
		if l.Cur != childFiles || l.Max != childFiles {
			return fmt.Errorf("RLIMIT_NOFILE %d/%d", l.Cur, l.Max)
		}
		return nil
	})
	check("not_dumpable", func() error {
		d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
		if err == nil && d != 0 {
			return fmt.Errorf("dumpable %d", d)
		}
		return err
	})
	check("rlimit_core", func() error {
		var l unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_CORE, &l); err != nil {
			return err
		}
		if l.Cur != 0 || l.Max != 0 {
			return fmt.Errorf("RLIMIT_CORE %d/%d", l.Cur, l.Max)
		}
		return nil
	})

	// What it must not do.
	check("open_etc_passwd", func() error {
		f, err := os.Open("/etc/passwd")
		if err == nil {
			f.Close()
		}
		return err
	})
	check("tcp_connect", func() error {
		c, err := net.Dial("tcp", os.Getenv(envAddr))
		if err == nil {
			c.Close()
		}
		return err
	})
	check("tcp_bind_port", func() error {
		// The parent's port: EADDRINUSE if the bind got as far as
		// the network stack, EACCES if Landlock stopped it.
		ln, err := net.Listen("tcp", os.Getenv(envAddr))
		if err == nil {
			ln.Close()
		}
		return err
	})
	check("tcp_bind_ephemeral", func() error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			ln.Close()
		}
		return err
	})
	check("clone_thread_newuser", func() error {
		// Refused by the filter (EPERM) before the kernel would
		// refuse the flags itself (EINVAL).
		flags := syscall.CLONE_THREAD | syscall.CLONE_SIGHAND | syscall.CLONE_VM | syscall.CLONE_NEWUSER
		_, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(flags), 0, 0, 0, 0, 0)
		if e != 0 {
			return e
		}
		return nil
	})
	check("socket_unix", func() error {
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err == nil {
			syscall.Close(fd)
		}
		return err
	})
	check("socketpair", func() error {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err == nil {
			syscall.Close(fds[0])
			syscall.Close(fds[1])
		}
		return err
	})
	check("execve", func() error { return syscall.Exec("/bin/true", []string{"true"}, nil) })
	check("fork_exec", func() error {
		// The standard streams are handed over as they are, so
		// os/exec need not open /dev/null (Landlock would refuse that
		// first): the clone itself is what is refused.
		cmd := exec.Command("/bin/true")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		return cmd.Run()
	})
	check("open_parent_mem", func() error {
		f, err := os.Open(fmt.Sprintf("/proc/%d/mem", os.Getppid()))
		if err == nil {
			f.Close()
		}
		return err
	})
	check("ro/write", func() error { return os.WriteFile(filepath.Join(ro, "new"), []byte("x"), 0o600) })
	check("ro/chmod", func() error { return os.Chmod(filepath.Join(ro, "data"), 0o777) })
	check("kill_parent", func() error { return syscall.Kill(os.Getppid(), 0) })
	check("raise_nofile", func() error {
		return unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: childFiles * 2, Max: childFiles * 2})
	})
	check("ioctl_tiocsti", func() error {
		c := byte('x')
		_, _, e := syscall.Syscall(syscall.SYS_IOCTL, 0, syscall.TIOCSTI, uintptr(unsafePointer(&c)))
		if e != 0 {
			return e
		}
		return nil
	})

	out, err := json.Marshal(childResult{Report: rep, EnterNS: enterNS, Checks: checks})
	if err != nil {
		fmt.Println("marshal:", err)
		return 2
	}
	fmt.Println(resultPrefix + string(out))
	return 0
}

// addWasm is a module exporting add(i32, i32) i32.
var addWasm = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
	0x01, 0x07, 0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f, // type: (i32, i32) -> i32
	0x03, 0x02, 0x01, 0x00, // func 0 has type 0
	0x07, 0x07, 0x01, 0x03, 'a', 'd', 'd', 0x00, 0x00, // export "add"
	0x0a, 0x09, 0x01, 0x07, 0x00, 0x20, 0x00, 0x20, 0x01, 0x6a, 0x0b, // local.get 0, local.get 1, i32.add
}

// runWasm compiles (to native code where wazero can, through a
// compilation cache in dir) and calls a module, as a worker does.
func runWasm(dir string) error {
	ctx := context.Background()
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return err
	}
	defer cache.Close(ctx)
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, addWasm)
	if err != nil {
		return err
	}
	res, err := mod.ExportedFunction("add").Call(ctx, 40, 2)
	if err != nil {
		return err
	}
	if res[0] != 42 {
		return fmt.Errorf("add(40, 2) = %d", res[0])
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
		return fmt.Errorf("compilation cache not written: %v %v", entries, err)
	}
	return nil
}

// same returns the one outcome all threads had, or lists them all.
func same(outcomes []string) string {
	for _, o := range outcomes[1:] {
		if o != outcomes[0] {
			return "differ: " + strings.Join(outcomes, ",")
		}
	}
	return outcomes[0]
}

// child runs the test binary in one child mode, with a fresh RO dir
// (holding one file), a fresh RW dir, the given listener's address and
// one end of a socketpair at fd 3, and returns what it printed and how
// it ended.
func child(t testing.TB, mode string, addr string) (stdout string, res *childResult, waitErr error) {
	t.Helper()
	ro, rw := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "data"), []byte("ro"), 0o644); err != nil {
		t.Fatal(err)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "parent end"), os.NewFile(uintptr(fds[1]), "child end")
	defer mine.Close()

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"="+mode, envRO+"="+ro, envRW+"="+rw, envAddr+"="+addr)
	cmd.ExtraFiles = []*os.File{theirs}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	// Answer the child on the channel, if it talks.
	go func() {
		buf := make([]byte, 64)
		if n, err := mine.Read(buf); err == nil && string(buf[:n]) == "from the sandbox" {
			mine.Write([]byte("from the parent"))
		}
	}()
	waitErr = cmd.Wait()
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), resultPrefix); ok {
			res = new(childResult)
			if err := json.Unmarshal([]byte(line), res); err != nil {
				t.Fatalf("child result: %v\n%s", err, out.String())
			}
		}
	}
	return out.String(), res, waitErr
}

// acceptNow takes a connection the listener's backlog already holds,
// without waiting: EAGAIN means no one has connected.
func acceptNow(t *testing.T, ln *net.TCPListener) error {
	t.Helper()
	rc, err := ln.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var aerr error
	if err := rc.Control(func(fd uintptr) {
		var nfd int
		nfd, _, aerr = syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if aerr == nil {
			syscall.Close(nfd)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return aerr
}

func TestEnter(t *testing.T) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	out, res, err := child(t, "full", ln.Addr().String())
	if err != nil || res == nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("Enter took %v: %v", time.Duration(res.EnterNS), res.Report)

	rep := res.Report
	if !rep.Complete() {
		t.Errorf("Report not complete on this kernel: %v", rep)
	}
	if rep.Landlock < 1 || !rep.LandlockNet || !rep.Seccomp || !rep.NoNewPrivs || !rep.Rlimits {
		t.Errorf("layers missing: %+v", rep)
	}
	if rep.SeccompSyscalls < 50 {
		t.Errorf("SeccompSyscalls = %d, implausibly few", rep.SeccompSyscalls)
	}

	want := map[string]string{
		"threads/open_etc_passwd": "EACCES",
		"threads/socket":          "EPERM",
		"threads/no_new_privs":    "ok",
		"new_threads":             "ok",
		"rw/create_write":         "ok",
		"rw/mkdir":                "ok",
		"rw/rename_across_dirs":   "ok",
		"rw/read":                 "ok",
		"rw/truncate":             "ok",
		"rw/symlink":              "ok",
		"rw/chtimes":              "ok",
		"rw/remove":               "ok",
		"ro/read":                 "ok",
		"ro/list":                 "ok",
		"goroutines":              "ok",
		"gc":                      "ok",
		"sleep_and_timer":         "ok",
		"pipe":                    "ok",
		"mmap_exec":               "ok",
		"wazero_compile_and_call": "ok",
		"channel_fd3":             "ok",
		"rlimit_nofile":           "ok",
		"rlimit_core":             "ok",
		"not_dumpable":            "ok",

		"open_etc_passwd":      "EACCES", // Landlock
		"tcp_connect":          "EPERM",  // seccomp refuses socket()
		"tcp_bind_port":        "EPERM",
		"tcp_bind_ephemeral":   "EPERM",
		"clone_thread_newuser": "EPERM",
		"socket_unix":          "EPERM",
		"socketpair":           "EPERM",
		"execve":               "EPERM",
		"fork_exec":            "EPERM", // clone without CLONE_THREAD
		"open_parent_mem":      "EACCES",
		"ro/write":             "EACCES",
		"ro/chmod":             "EPERM", // chmod by path is not in the allowlist
		"kill_parent":          "EPERM",
		"raise_nofile":         "EPERM",
		"ioctl_tiocsti":        "EPERM",
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			if got, ok := res.Checks[name]; !ok || got != w {
				t.Errorf("%s: got %q, want %q", name, got, w)
			}
		})
	}
	for name := range res.Checks {
		if _, ok := want[name]; !ok {
			t.Errorf("child ran check %q that the test does not assert", name)
		}
	}
	if err := acceptNow(t, ln); !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("listener saw a connection from the sandbox (accept: %v)", err)
	}
	// The same look sees a connection that was made.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := acceptNow(t, ln); err != nil {
		t.Errorf("acceptNow misses a real connection: %v", err)
	}
}

// TestEnterWithoutLandlock runs as on a kernel without Landlock: the
// Report must say so, and what Landlock would refuse must then happen.
func TestEnterWithoutLandlock(t *testing.T) {
	out, res, err := child(t, "nolandlock", "127.0.0.1:1")
	if err != nil || res == nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	rep := res.Report
	if rep.Complete() || rep.Landlock != 0 || rep.LandlockNet {
		t.Errorf("Report claims Landlock: %+v", rep)
	}
	if !strings.Contains(strings.Join(rep.Missing, "\n"), "landlock:") {
		t.Errorf("Missing does not list Landlock: %q", rep.Missing)
	}
	if !rep.Seccomp || !rep.NoNewPrivs || !rep.Rlimits {
		t.Errorf("other layers missing: %+v", rep)
	}
	for name, w := range map[string]string{
		"open_etc_passwd":         "ok", // reality: nothing stops it now
		"threads/open_etc_passwd": "ok",
		"ro/write":                "ok",
		"socket_unix":             "EPERM", // seccomp still holds
		"threads/socket":          "EPERM",
		"execve":                  "EPERM",
		"rw/rename_across_dirs":   "ok",
	} {
		if got := res.Checks[name]; got != w {
			t.Errorf("%s: got %q, want %q", name, got, w)
		}
	}
}

// TestEnterWithoutSeccomp runs Landlock without seccomp in front of it:
// its network rules must refuse TCP connect and bind on their own, and
// the Report must say seccomp is missing.
func TestEnterWithoutSeccomp(t *testing.T) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, res, err := child(t, "noseccomp", ln.Addr().String())
	if err != nil || res == nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	rep := res.Report
	if rep.Complete() || rep.Seccomp || rep.SeccompSyscalls != 0 {
		t.Errorf("Report claims seccomp: %+v", rep)
	}
	if !strings.Contains(strings.Join(rep.Missing, "\n"), "seccomp:") {
		t.Errorf("Missing does not list seccomp: %q", rep.Missing)
	}
	if rep.Landlock < 4 || !rep.LandlockNet {
		t.Skipf("SKIPPED: this kernel's Landlock (ABI %d) has no network rules to test", rep.Landlock)
	}
	want := map[string]string{
		"tcp_connect":   "EACCES", // Landlock's network rules
		"tcp_bind_port": "EACCES",
		// Landlock (ABI 7 here) lets a bind to port 0 through, and
		// never governs listen: only seccomp keeps a worker from
		// serving on an ephemeral port.
		"tcp_bind_ephemeral":      "ok",
		"socket_unix":             "ok", // only seccomp refuses sockets
		"open_etc_passwd":         "EACCES",
		"threads/open_etc_passwd": "EACCES",
		"threads/no_new_privs":    "ok",    // set by psx alone here
		"kill_parent":             "EPERM", // Landlock's signal scope (ABI 6)
		"open_parent_mem":         "EACCES",
		"rw/rename_across_dirs":   "ok",
	}
	if rep.Landlock < 6 {
		delete(want, "kill_parent") // no signal scoping before ABI 6
	}
	for name, w := range want {
		if got := res.Checks[name]; got != w {
			t.Errorf("%s: got %q, want %q", name, got, w)
		}
	}
	if err := acceptNow(t, ln); !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("listener saw a connection from the sandbox (accept: %v)", err)
	}
}

// TestEnterKills checks the calls that end the process rather than fail.
func TestEnterKills(t *testing.T) {
	for _, mode := range []string{"kill-ptrace", "kill-unshare"} {
		t.Run(mode, func(t *testing.T) {
			out, _, err := child(t, mode, "127.0.0.1:1")
			if !strings.Contains(out, enteredLine) {
				t.Fatalf("child did not get to Enter: %v\n%s", err, out)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("child was not killed: %v\n%s", err, out)
			}
			ws, ok := ee.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
				t.Errorf("child ended with %v, want SIGSYS\n%s", err, out)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{
		{ReadOnly: []string{"relative"}},
		{ReadWrite: []string{filepath.Join(dir, "missing")}},
		{ReadOnly: []string{file}},
	} {
		// A bad Config must fail before Enter changes anything, or
		// this test process would be sandboxed.
		if _, err := Enter(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("Enter(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil || l.Cur == childFiles {
		t.Errorf("a refused Config changed RLIMIT_NOFILE: %+v %v", l, err)
	}
}

// TestPolicyNames checks that every syscall name outside the legacy
// lists exists on both architectures the filter is written for, so that
// none is silently dropped, and that the filter assembles on each.
func TestPolicyNames(t *testing.T) {
	for _, name := range []string{"amd64", "arm64"} {
		info, err := arch.GetInfo(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range append(append([]string(nil), allowed...), killed...) {
			if _, ok := info.SyscallNames[n]; !ok {
				t.Errorf("%s has no syscall %q", name, n)
			}
		}
		if _, ok := info.SyscallNames["newfstatat"]; !ok {
			if _, ok := info.SyscallNames["fstatat"]; !ok {
				t.Errorf("%s allows no fstatat", name)
			}
		}
		p, size, err := policyFor(info, 1)
		if err != nil {
			t.Fatal(err)
		}
		if name == runtime.GOARCH {
			// The library assembles for the running architecture
			// only.
			if _, err := p.Assemble(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		t.Logf("%s: %d syscalls allowed", name, size)
	}
	amd64, _ := arch.GetInfo("amd64")
	for _, n := range append(append([]string(nil), allowedLegacy...), killedLegacy...) {
		if _, ok := amd64.SyscallNames[n]; !ok && n != "fstatat" {
			t.Errorf("amd64 has no legacy syscall %q", n)
		}
	}
}

func TestPolicyAssembles(t *testing.T) {
	p, n, err := policy(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Assemble(); err != nil {
		t.Fatal(err)
	}
	t.Logf("allowlist: %d syscalls", n)
	if n < 50 {
		t.Errorf("allowlist size %d", n)
	}
}

// BenchmarkEnter starts a fresh child and enters the sandbox in it:
// enter-ns/op is Enter alone, ns/op the whole process from exec to exit.
func BenchmarkEnter(b *testing.B) {
	var total int64
	for b.Loop() {
		out, res, err := child(b, "bench", "127.0.0.1:1")
		if err != nil || res == nil {
			b.Fatalf("child: %v\n%s", err, out)
		}
		total += res.EnterNS
	}
	b.ReportMetric(float64(total)/float64(b.N), "enter-ns/op")
}
