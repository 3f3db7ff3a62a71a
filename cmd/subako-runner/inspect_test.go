package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInspectServesThePackage runs `subako-runner inspect` as a user does:
// it prints the page's URL with its token on stdout; the page and a call
// work with the token, nothing works without it, and Ctrl-C ends it with
// status 0.
func TestInspectServesThePackage(t *testing.T) {
	bin := runnerBinary(t)
	cgreet, _ := filepath.Abs("../../testdata/packages/cgreet")
	cmd := exec.Command(bin, "inspect", "--no-cache", cgreet)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		cmd.Process.Kill()
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, out)
		exited <- cmd.Wait()
	}()
	var pageURL string
	select {
	case pageURL = <-lines:
	case err := <-exited:
		t.Fatalf("inspect exited before printing its URL: %v\n%s", err, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("inspect printed no URL:\n%s", stderr.String())
	}
	u, err := url.Parse(pageURL)
	if err != nil || u.Query().Get("token") == "" || u.Hostname() != "127.0.0.1" {
		t.Fatalf("URL %q: want a loopback URL with a token", pageURL)
	}
	page, err := http.Get(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if page.StatusCode != 200 {
		t.Fatalf("the page: %d", page.StatusCode)
	}
	call := func(token string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest("POST", u.Scheme+"://"+u.Host+"/api/call", strings.NewReader(`{"tool":"greet","arguments":{"name":"Ada"}}`))
		if token != "" {
			req.Header.Set("X-Subako-Token", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	if resp, _ := call(""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a call without the token: %d", resp.StatusCode)
	}
	resp, body := call(u.Query().Get("token"))
	view, _ := json.Marshal(body["view"])
	if resp.StatusCode != 200 || body["outcome"] != "ok" || !strings.Contains(string(view), "Ada") {
		t.Fatalf("a call with the token: %d %v", resp.StatusCode, body)
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("inspect after Ctrl-C: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("inspect did not stop on Ctrl-C")
	}
}

func TestInspectRefusesARemoteListenAddress(t *testing.T) {
	code, _, stderr := cli(t, "", "inspect", "--listen", "0.0.0.0:0", "../../testdata/packages/cgreet")
	if code != exitUsage || !strings.Contains(stderr, "--listen-allow-remote") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
