package inspect

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako-runner/internal/devtools/testguest"
)

// chromium finds Debian's headless-capable Chromium. Without it the browser
// tests cannot run: in CI (CI set, where .ci/run installs it) that is a
// failure; elsewhere the tests say loudly what is missing and skip.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		// make test's -race pass: the page was driven in the first pass.
		t.Skip("browser tests run without -short")
	}
	for _, name := range []string{os.Getenv("SUBAKO_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "BROWSER TESTS NOT RUN: no chromium on PATH (apt-get install chromium, or set SUBAKO_CHROMIUM)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser opens a fresh headless Chromium (its own empty profile, no
// background networking: only the loopback page is ever fetched).
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// steps runs browser actions, failing the test at the first that fails.
func steps(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	for i, a := range actions {
		// A bound per step, so a broken page fails the test instead of
		// hanging the suite; it is not a timing assertion.
		sctx, cancel := context.WithTimeout(ctx, stepTimeout)
		err := chromedp.Do(sctx, a)
		cancel()
		if err != nil {
			// What the page shows says more than a deadline: keep it.
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if body, e := chromedp.Run(dctx, chromedp.Evaluate[string](`document.body.innerText`)); e == nil {
				t.Logf("the page reads:\n%s", body)
			}
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
}

// stepTimeout bounds one browser step; a conformance run is the longest.
const stepTimeout = 2 * time.Minute

// value runs one action that returns a value.
func value[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := value(t, ctx, chromedp.FullScreenshot(100)) // quality 100 means PNG
	p := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

func TestBrowserGreet(t *testing.T) {
	ctx := browser(t)
	srv, hs := newServer(t, greetPackage(t))
	steps(t, ctx,
		chromedp.Navigate(hs.URL+"/?token="+srv.Token()),
		chromedp.WaitVisible(`.tool-list button[data-tool="greet"]`),
		chromedp.Click(`.tool-list button[data-tool="greet"]`),
		chromedp.WaitVisible(`#args-form input[data-name="name"]`),
		chromedp.SendKeys(`#args-form input[data-name="name"]`, "Ada"),
		chromedp.Click(`#call`),
		chromedp.WaitVisible(`#model-view`),
	)
	view := value(t, ctx, chromedp.Text(`#model-view`))
	stats := value(t, ctx, chromedp.Text(`.stats`))
	if !strings.Contains(view, "Hello, Ada!") {
		t.Fatalf("model view: %q", view)
	}
	if !strings.Contains(stats, "fuel") || !strings.Contains(stats, "peak memory") {
		t.Fatalf("stats: %q", stats)
	}
	screenshot(t, ctx, "greet.png")

	// The JSON editor drives the form, and what the schema refuses is
	// refused before any call.
	value(t, ctx, chromedp.Evaluate[bool](`(() => { const r = document.querySelector('#raw-json');
		r.value = '{"name": "Grace"}'; return r.dispatchEvent(new Event('input', {bubbles: true})); })()`))
	if got := value(t, ctx, chromedp.Evaluate[string](`document.querySelector('#args-form input[data-name="name"]').value`)); got != "Grace" {
		t.Fatalf("the form did not follow the JSON editor: name is %q", got)
	}
	value(t, ctx, chromedp.Evaluate[bool](`(() => { const r = document.querySelector('#raw-json');
		r.value = '{}'; return r.dispatchEvent(new Event('input', {bubbles: true})); })()`))
	steps(t, ctx, chromedp.Click(`#call`), chromedp.WaitVisible(`#form-error:not(:empty)`))
	formErr := value(t, ctx, chromedp.Text(`#form-error`))
	if !strings.Contains(formErr, "inputSchema") {
		t.Fatalf("form error: %q", formErr)
	}

	// A narrow window still shows the form and the result.
	steps(t, ctx, chromedp.EmulateViewport(480, 900))
	width := value(t, ctx, chromedp.Evaluate[int64](`document.documentElement.scrollWidth`))
	if width > 480 {
		t.Errorf("at 480 px the page is %d px wide: it scrolls sideways", width)
	}
	screenshot(t, ctx, "greet-narrow.png")
}

func TestBrowserImage(t *testing.T) {
	ctx := browser(t)
	srv, hs := newServer(t, greetPackage(t))
	steps(t, ctx,
		chromedp.Navigate(hs.URL+"/?token="+srv.Token()),
		chromedp.WaitVisible(`.tool-list button[data-tool="media"]`),
		chromedp.Click(`.tool-list button[data-tool="media"]`),
		chromedp.WaitVisible(`h2 code`),
		chromedp.Click(`#call`),
		chromedp.WaitVisible(`#model-view img`),
	)
	// Every image decoded: the inline one (data: URL) and the volume file
	// (served from the kept /volume/tmp).
	decoded := value(t, ctx, chromedp.Poll[int](`(() => { const imgs = [...document.querySelectorAll('#model-view img')];
		return imgs.length >= 2 && imgs.every(i => i.complete && i.naturalWidth > 0) ? imgs.length : 0; })()`))
	if decoded < 2 {
		t.Fatalf("%d decoded images", decoded)
	}
	screenshot(t, ctx, "media.png")
}

func TestBrowserCrash(t *testing.T) {
	ctx := browser(t)
	dir := testguest.Package(t, testguest.Go(t, guests+"misbehave"), "misbehave", nil)
	srv, hs := newServer(t, dir)
	steps(t, ctx,
		chromedp.Navigate(hs.URL+"/?token="+srv.Token()),
		chromedp.WaitVisible(`.tool-list button[data-tool="stderr_crash"]`),
		chromedp.Click(`.tool-list button[data-tool="stderr_crash"]`),
		chromedp.WaitVisible(`h2 code`),
		chromedp.Click(`#call`),
		chromedp.WaitVisible(`.crash-code`),
	)
	code := value(t, ctx, chromedp.Text(`.crash-code`))
	stderr := value(t, ctx, chromedp.TextContent(`pre.stderr`))
	if code != "exit_code" || !strings.Contains(stderr, "STDERR-TAIL-MARKER") {
		t.Fatalf("crash code %q, stderr %q", code, stderr)
	}
	screenshot(t, ctx, "crash.png")
}

func TestBrowserCheck(t *testing.T) {
	ctx := browser(t)
	srv, hs := newServer(t, greetPackage(t))
	steps(t, ctx,
		chromedp.Navigate(hs.URL+"/?token="+srv.Token()),
		chromedp.Click(`#tab-check`),
		chromedp.WaitVisible(`#run-check`),
		chromedp.Click(`#run-check`),
		chromedp.WaitVisible(`#check-list li`),
	)
	n := value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#check-list li').length`))
	if n < 10 {
		t.Fatalf("the Check tab lists %d checks", n)
	}
	screenshot(t, ctx, "check.png")
}

func TestBrowserRejected(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), []byte("\x00asm\x0d\x00\x01\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "subako-package.json"), []byte(`{"abi":1,"name":"component"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, hs := newServer(t, dir)
	// Navigate returns at the load event, when a headless screenshot is
	// taken: the page must show the refusal by then, with no wait for an
	// API request (issue 42: the screenshot caught "Loading…").
	steps(t, ctx, chromedp.Navigate(hs.URL+"/?token="+srv.Token()))
	first := value(t, ctx, chromedp.Evaluate[string](`document.getElementById("pkg-name").textContent + "|" + document.getElementById("pkg-status").textContent`))
	if first != "component|refused at upload" {
		t.Fatalf("at the load event the page shows %q; want the refused package", first)
	}
	steps(t, ctx, chromedp.WaitVisible(`#upload-list li[data-code="component"]`))
	status := value(t, ctx, chromedp.Text(`#pkg-status`))
	row := value(t, ctx, chromedp.Text(`#upload-list li[data-code="component"]`))
	if status != "refused at upload" || !strings.Contains(row, "component") {
		t.Fatalf("status %q, row %q", status, row)
	}
	screenshot(t, ctx, "rejected.png")
}

// TestBrowserHostileFiles: a module's files opened in a tab of the page's
// origin (as a user clicking them, or any page on 127.0.0.1 navigating
// there, would) run nothing: the HTML, the SVG and the HTML behind PNG
// magic bytes each load a script that would retitle the tab and POST
// /api/call with the token cookie. The title stays, and the only call the
// server sees is the test's own.
func TestBrowserHostileFiles(t *testing.T) {
	ctx := browser(t)
	srv, err := New(context.Background(), Config{Runtime: newRuntime(t), Path: hostilePackage(t), History: 4})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls, scripts int
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Method == http.MethodPost && r.URL.Path == "/api/call" {
			calls++
		}
		if strings.HasSuffix(r.URL.Path, "/files/1") { // evil.js
			scripts++
		}
		mu.Unlock()
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.Close()
		srv.Close(context.Background())
	})
	steps(t, ctx,
		chromedp.Navigate(hs.URL+"/?token="+srv.Token()),
		chromedp.WaitVisible(`.tool-list button[data-tool="drop"]`),
		chromedp.Click(`.tool-list button[data-tool="drop"]`),
		chromedp.WaitVisible(`h2 code`),
		chromedp.Click(`#call`),
		chromedp.WaitVisible(`#model-view`),
	)
	var history []callSummary
	do(t, hs, srv.Token(), "GET", "/api/calls", nil, &history)
	if len(history) != 1 {
		t.Fatalf("history %+v", history)
	}
	id := history[0].ID
	for _, file := range []string{"0", "2", "3"} { // evil.html, evil.svg, png.html
		url := fmt.Sprintf("%s/api/calls/%d/files/%s", hs.URL, id, file)
		// An attachment ends the navigation as a download (an error for
		// chromedp); what matters is what ran.
		nctx, cancel := context.WithTimeout(ctx, stepTimeout)
		_, _ = chromedp.Run(nctx, chromedp.Navigate(url))
		cancel()
		if title := value(t, ctx, chromedp.Title()); title == "pwned" {
			t.Errorf("file %s ran the module's script (title %q)", file, title)
		}
	}
	// One more page load: a script that did run would have had its fetch
	// answered by now.
	steps(t, ctx, chromedp.Navigate(hs.URL+"/?token="+srv.Token()), chromedp.WaitVisible(`.tool-list button[data-tool="drop"]`))
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("the server saw %d POST /api/call, want only the test's own: a module file ran its script", calls)
	}
	if scripts != 0 {
		t.Errorf("evil.js was fetched %d times: a module file loaded it as a script", scripts)
	}
}
