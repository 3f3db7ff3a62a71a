package runtime

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/fuel"
)

// artifactMaker is the program the previous commit's runner is built into:
// it uploads a package and saves its artifact, as a backend did before the
// upgrade. It uses only the API an embedder of that commit had.
const artifactMaker = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/subako/subako-runner/runtime"
)

func main() {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer rt.Close(ctx)
	pkg, err := rt.Load(ctx, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pkg.Artifact().Save(os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("saved by runner", runtime.Version)
}
`

// TestArtifactFromPreviousCommitOpens builds the runner of the previous
// commit (HEAD~1, or the revision in SUBAKO_PREVIOUS_RUNNER), has it upload
// a package and save the artifact, and opens that artifact with this code:
// an upgrade must not ask for the package to be uploaded again. Without git
// history (a shallow clone) it skips, and says so.
func TestArtifactFromPreviousCommitOpens(t *testing.T) {
	t.Parallel()
	heavy(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	rev := os.Getenv("SUBAKO_PREVIOUS_RUNNER")
	if rev == "" {
		rev = "HEAD~1"
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", rev+"^{commit}").Output()
	if err != nil {
		t.Skipf("SKIPPED: no commit %s in %s (a shallow clone, or not a git checkout: %v); the upgrade test needs the previous commit's runner", rev, root, err)
	}
	commit := strings.TrimSpace(string(out))

	// The previous commit's tree, unpacked (no worktree: the repository
	// is left as it is).
	tree := t.TempDir()
	archive, err := exec.Command("git", "-C", root, "archive", "--format=tar", commit).Output()
	if err != nil {
		t.Fatalf("git archive %s: %v", commit, err)
	}
	if err := untar(tree, archive); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tree, "runtime", "artifact.go")); err != nil {
		t.Skipf("SKIPPED: commit %s has no artifacts yet", commit)
	}
	mainDir := filepath.Join(tree, "cmd", "zz-artifact-maker")
	if err := os.MkdirAll(mainDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeStoreFile(t, filepath.Join(mainDir, "main.go"), []byte(artifactMaker))
	maker := filepath.Join(t.TempDir(), "maker")
	build := exec.Command("go", "build", "-o", maker, "./cmd/zz-artifact-maker")
	build.Dir = tree
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the runner of %s: %v\n%s", commit, err, out)
	}

	dir := makePackage(t, "../testdata/packages/cgreet/module.wasm", nil)
	store := t.TempDir()
	if out, err := exec.Command(maker, dir, store).CombinedOutput(); err != nil {
		t.Fatalf("the runner of %s could not upload: %v\n%s", commit, err, out)
	} else {
		t.Logf("%s: %s", commit[:12], strings.TrimSpace(string(out)))
	}

	a, err := ReadArtifact(store)
	if err != nil {
		t.Fatalf("the artifact of %s does not read: %v", commit, err)
	}
	// A runtime that never saw the package: what an upgraded host is.
	rt, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	pkg, err := rt.Open(context.Background(), a, dir)
	if err != nil {
		t.Fatalf("the artifact of %s (runner %s, metering %d) was refused: %v", commit, a.Runner, a.Metering, err)
	}
	defer pkg.Close(context.Background())
	want := MeteringVerified
	if a.Metering != fuel.MeteringVersion {
		want = MeteringRederived
	}
	if pkg.Opened.Metering != want {
		t.Errorf("opened with metering %q, want %q (artifact metering %d, this runner %d)", pkg.Opened.Metering, want, a.Metering, fuel.MeteringVersion)
	}
	if pkg.Discovery().Pages != 0 {
		t.Error("opening ran discovery")
	}
	res := call(t, pkg, CallRequest{Tool: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if res.Outcome != OutcomeOK || !strings.Contains(viewText(res), "Ada") {
		t.Fatalf("call on the package opened from %s's artifact: %s %q", commit, res.Outcome, viewText(res))
	}
	t.Logf("artifact of %s (runner %s, metering %d) opened: %s", commit[:12], a.Runner, a.Metering, pkg.Opened.Metering)
}

// untar unpacks a git archive (regular files and directories only) into dir.
func untar(dir string, archive []byte) error {
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, dir+string(filepath.Separator)) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(name), 0o755); err == nil {
				var b []byte
				if b, err = io.ReadAll(tr); err == nil {
					err = os.WriteFile(name, b, 0o644)
				}
			}
		}
		if err != nil {
			return err
		}
	}
}
