package protocol

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var (
	pngBytes  = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR rest")
	jpegBytes = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00")
	gifBytes  = []byte("GIF89a\x01\x00\x01\x00")
	webpBytes = []byte("RIFF\x24\x00\x00\x00WEBPVP8 ")
)

func TestImageType(t *testing.T) {
	tests := []struct {
		b    []byte
		want string
	}{
		{pngBytes, MimePNG}, {jpegBytes, MimeJPEG}, {gifBytes, MimeGIF}, {[]byte("GIF87a"), MimeGIF}, {webpBytes, MimeWebP},
		{[]byte("RIFF\x24\x00\x00\x00WAVE"), ""}, {[]byte("\x89PNG"), ""}, {[]byte("BM\x00\x00"), ""}, {nil, ""}, {[]byte("GIF88a"), ""},
	}
	for _, tt := range tests {
		if got := ImageType(tt.b); got != tt.want {
			t.Errorf("ImageType(%q) = %q, want %q", tt.b, got, tt.want)
		}
	}
}

// rootResolver is what the runtime does, in miniature: mounts as os.Roots.
type rootResolver struct{ mounts map[string]*os.Root }

func (r rootResolver) ResolveVolume(guestPath string) (VolumeFile, error) {
	rest, ok := strings.CutPrefix(guestPath, "/volume/")
	if !ok {
		return VolumeFile{}, errors.New("not under /volume")
	}
	mount, rel, _ := strings.Cut(rest, "/")
	root, ok := r.mounts[mount]
	if !ok || rel == "" {
		return VolumeFile{}, fmt.Errorf("/volume/%s is not mounted in this call", mount)
	}
	f, err := root.Open(rel)
	if err != nil {
		return VolumeFile{}, errors.New("no such file")
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return VolumeFile{}, errors.New("not a regular file")
	}
	head := make([]byte, SniffLen)
	n, _ := io.ReadFull(f, head)
	return VolumeFile{HostPath: filepath.Join(root.Name(), rel), Size: st.Size(), Head: head[:n]}, nil
}

func newResolver(t *testing.T) (rootResolver, string) {
	t.Helper()
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	for _, d := range []string{tmp, filepath.Join(tmp, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]byte{
		"chart 1.png": pngBytes, "report.csv": []byte("a,b\n1,2\n"), "fake.png": []byte("not an image"),
		"sub/photo.jpg": jpegBytes, "100%.txt": []byte("x"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.png"), pngBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret.png", filepath.Join(tmp, "escape.png")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(tmp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return rootResolver{mounts: map[string]*os.Root{"tmp": root}}, tmp
}

func viewOf(t *testing.T, blocks string, r VolumeResolver) []ViewItem {
	t.Helper()
	res, err := ParseCallToolResult(json.RawMessage(`{"content":[` + blocks + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	return BuildView(res, r)
}

func TestBuildView(t *testing.T) {
	r, tmp := newResolver(t)
	b64 := base64.StdEncoding.EncodeToString
	raw64 := base64.RawStdEncoding.EncodeToString
	tests := []struct {
		name  string
		block string
		want  ViewItem
	}{
		{"text", `{"type":"text","text":"Hello, Ada!"}`, ViewItem{Type: "text", Text: "Hello, Ada!"}},
		{"empty text", `{"type":"text","text":""}`, ViewItem{Type: "text"}},
		{"text without text", `{"type":"text"}`, ViewItem{Type: "note", Text: `text block omitted: it has no string "text"`}},
		{"png", `{"type":"image","mimeType":"image/png","data":"` + b64(pngBytes) + `"}`, ViewItem{Type: "image", MimeType: MimePNG, Bytes: int64(len(pngBytes)), Source: "inline"}},
		{"jpeg unpadded", `{"type":"image","mimeType":"image/jpeg","data":"` + raw64(jpegBytes) + `"}`, ViewItem{Type: "image", MimeType: MimeJPEG, Bytes: int64(len(jpegBytes)), Source: "inline"}},
		{"gif upper-case mime", `{"type":"image","mimeType":"IMAGE/GIF","data":"` + b64(gifBytes) + `"}`, ViewItem{Type: "image", MimeType: MimeGIF, Bytes: int64(len(gifBytes)), Source: "inline"}},
		{"webp", `{"type":"image","mimeType":"image/webp","data":"` + b64(webpBytes) + `"}`, ViewItem{Type: "image", MimeType: MimeWebP, Bytes: int64(len(webpBytes)), Source: "inline"}},
		{"image wrong magic", `{"type":"image","mimeType":"image/png","data":"` + b64(jpegBytes) + `"}`, ViewItem{Type: "note", Text: "image omitted: declared image/png but the bytes are image/jpeg"}},
		{"image not an image", `{"type":"image","mimeType":"image/png","data":"` + b64([]byte("hello")) + `"}`, ViewItem{Type: "note", Text: "image omitted: its bytes are not image/png data (the magic bytes do not match)"}},
		{"image bad base64", `{"type":"image","mimeType":"image/png","data":"!!!"}`, ViewItem{Type: "note"}},
		{"image url-safe base64", `{"type":"image","mimeType":"image/png","data":"` + base64.URLEncoding.EncodeToString([]byte("\xff\xfe\xfd")) + `"}`, ViewItem{Type: "note"}},
		{"image svg", `{"type":"image","mimeType":"image/svg+xml","data":"PHN2Zz4="}`, ViewItem{Type: "note", Text: `image omitted: mimeType "image/svg+xml" is not one of image/png, image/jpeg, image/gif, image/webp`}},
		{"image without data", `{"type":"image","mimeType":"image/png"}`, ViewItem{Type: "note", Text: "image omitted: it has no string data"}},
		{"volume image", `{"type":"resource_link","uri":"volume:///tmp/chart%201.png","name":"chart"}`, ViewItem{Type: "image", MimeType: MimePNG, Bytes: int64(len(pngBytes)), Source: "volume:///tmp/chart%201.png", URI: "volume:///tmp/chart%201.png", Path: "/volume/tmp/chart 1.png", HostPath: filepath.Join(tmp, "chart 1.png")}},
		{"volume image in subdirectory", `{"type":"resource_link","uri":"volume:///tmp/sub/photo.jpg","name":"p"}`, ViewItem{Type: "image", MimeType: MimeJPEG, Bytes: int64(len(jpegBytes)), Source: "volume:///tmp/sub/photo.jpg", URI: "volume:///tmp/sub/photo.jpg", Path: "/volume/tmp/sub/photo.jpg", HostPath: filepath.Join(tmp, "sub/photo.jpg")}},
		{"volume file", `{"type":"resource_link","uri":"volume:///tmp/report.csv","name":"r","mimeType":"text/csv"}`, ViewItem{Type: "file", MimeType: "text/csv", URI: "volume:///tmp/report.csv", Path: "/volume/tmp/report.csv", HostPath: filepath.Join(tmp, "report.csv"), Size: 8}},
		{"volume file named .png is still a file", `{"type":"resource_link","uri":"volume:///tmp/fake.png","name":"f"}`, ViewItem{Type: "file", URI: "volume:///tmp/fake.png", Path: "/volume/tmp/fake.png", HostPath: filepath.Join(tmp, "fake.png"), Size: 12}},
		{"volume percent in name", `{"type":"resource_link","uri":"volume:///tmp/100%25.txt","name":"p"}`, ViewItem{Type: "file", URI: "volume:///tmp/100%25.txt", Path: "/volume/tmp/100%.txt", HostPath: filepath.Join(tmp, "100%.txt"), Size: 1}},
		{"volume missing file", `{"type":"resource_link","uri":"volume:///tmp/nope.png","name":"n"}`, ViewItem{Type: "note", Text: `the link "volume:///tmp/nope.png" does not resolve: no such file`}},
		{"volume directory", `{"type":"resource_link","uri":"volume:///tmp/sub","name":"d"}`, ViewItem{Type: "note", Text: `the link "volume:///tmp/sub" does not resolve: not a regular file`}},
		{"volume symlink escape", `{"type":"resource_link","uri":"volume:///tmp/escape.png","name":"e"}`, ViewItem{Type: "note", Text: `the link "volume:///tmp/escape.png" does not resolve: no such file`}},
		{"volume dot-dot", `{"type":"resource_link","uri":"volume:///tmp/../secret.png","name":"e"}`, ViewItem{Type: "note", Text: `the link "volume:///tmp/../secret.png" does not resolve: it has a ".." segment`}},
		{"volume encoded dot-dot", `{"type":"resource_link","uri":"volume:///tmp/%2E%2E/secret.png","name":"e"}`, ViewItem{Type: "note", Text: `the link "volume:///tmp/%2E%2E/secret.png" does not resolve: it has a ".." segment`}},
		{"volume encoded slash", `{"type":"resource_link","uri":"volume:///tmp%2Fchart%201.png","name":"e"}`, ViewItem{Type: "note", Text: `the link "volume:///tmp%2Fchart%201.png" does not resolve: a segment contains an encoded '/' (%2F); a file name cannot contain '/'`}},
		{"volume unmounted", `{"type":"resource_link","uri":"volume:///data/x.csv","name":"e"}`, ViewItem{Type: "note", Text: `the link "volume:///data/x.csv" does not resolve: /volume/data is not mounted in this call`}},
		{"web link", `{"type":"resource_link","uri":"https://example.com/x","name":"x"}`, ViewItem{Type: "link", Text: "x: https://example.com/x", URI: "https://example.com/x"}},
		{"file link is just a link", `{"type":"resource_link","uri":"file:///etc/passwd","name":"p"}`, ViewItem{Type: "link", Text: "p: file:///etc/passwd", URI: "file:///etc/passwd"}},
		{"link without name", `{"type":"resource_link","uri":"https://example.com/x"}`, ViewItem{Type: "link", Text: "https://example.com/x", URI: "https://example.com/x"}},
		{"link without uri", `{"type":"resource_link","name":"x"}`, ViewItem{Type: "note", Text: "resource_link omitted: it has no string uri"}},
		{"audio", `{"type":"audio","mimeType":"audio/wav","data":"AAAA"}`, ViewItem{Type: "note", Text: `"audio" block omitted`}},
		{"resource", `{"type":"resource","resource":{"uri":"x","text":"y"}}`, ViewItem{Type: "note", Text: `"resource" block omitted`}},
		{"unknown", `{"type":"hologram"}`, ViewItem{Type: "note", Text: `"hologram" block omitted`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := viewOf(t, tt.block, r)
			if len(v) != 1 {
				t.Fatalf("view = %+v", v)
			}
			got := v[0]
			if tt.want.Type == "note" && tt.want.Text == "" {
				if got.Type != "note" || got.Text == "" {
					t.Errorf("got %+v, want a note", got)
				}
				return
			}
			data := got.Data
			got.Data = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if got.Type == "image" && got.Source == "inline" && int64(len(data)) != got.Bytes {
				t.Errorf("Data has %d bytes, Bytes = %d", len(data), got.Bytes)
			}
		})
	}
}

func TestBuildViewKeepsOrderAndNeedsNoResolver(t *testing.T) {
	v := viewOf(t, `{"type":"text","text":"a"},{"type":"resource_link","uri":"volume:///tmp/x"},{"type":"text","text":"b"}`, nil)
	if len(v) != 3 || v[0].Text != "a" || v[1].Type != "note" || !strings.Contains(v[1].Text, "no volume") || v[2].Text != "b" {
		t.Fatalf("view = %+v", v)
	}
	b, err := json.Marshal(v[0])
	if err != nil || string(b) != `{"type":"text","text":"a"}` {
		t.Errorf("JSON = %s %v", b, err)
	}
}

func TestVolumePath(t *testing.T) {
	tests := []struct{ uri, want string }{
		{"volume:///tmp/chart%201.png", "/volume/tmp/chart 1.png"},
		{"volume:///tmp/a/b/c.txt", "/volume/tmp/a/b/c.txt"},
		{"VOLUME:///tmp/x", "/volume/tmp/x"},
		{"volume:///data/%E6%97%A5%E6%9C%AC.txt", "/volume/data/日本.txt"},
		{"volume:///tmp/日本.txt", "/volume/tmp/日本.txt"},
		{"volume:///tmp/a%3Fb%23c", "/volume/tmp/a?b#c"},
		{"volume:///tmp/...", "/volume/tmp/..."},
		{"volume:///tmp/.hidden", "/volume/tmp/.hidden"},
		{"volume:///tmp/a+b", "/volume/tmp/a+b"},
	}
	for _, tt := range tests {
		got, err := VolumePath(tt.uri)
		if err != nil || got != tt.want {
			t.Errorf("VolumePath(%q) = %q, %v; want %q", tt.uri, got, err, tt.want)
		}
	}
	for _, bad := range []string{
		"volume://tmp/x", "volume:/tmp/x", "volume:tmp/x", "volume:///", "volume:///tmp/", "volume:///tmp//x",
		"volume:///tmp/./x", "volume:///tmp/../x", "volume:///tmp/%2e%2e/x", "volume:///tmp/%2E/x", "volume:///tmp/a%2Fb",
		"volume:///tmp/a%00b", "volume:///tmp/a\x00b", "volume:///tmp/%", "volume:///tmp/%4", "volume:///tmp/%zz",
		"volume:///tmp/x?y", "volume:///tmp/x#y", "https://example.com/x", "volume:", "",
	} {
		if got, err := VolumePath(bad); err == nil {
			t.Errorf("VolumePath(%q) = %q, want error", bad, got)
		}
	}
}

func FuzzVolumePath(f *testing.F) {
	for _, s := range []string{"volume:///tmp/chart%201.png", "volume:///tmp/%2e%2e/x", "volume:///tmp/a%2Fb", "volume:///data/%E6%97%A5", "volume:///tmp//x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		p, err := VolumePath(uri)
		if err != nil {
			return
		}
		if !strings.HasPrefix(p, "/volume/") || len(p) == len("/volume/") {
			t.Fatalf("%q → %q: not a file under /volume", uri, p)
		}
		if strings.IndexByte(p, 0) >= 0 {
			t.Fatalf("%q → %q: NUL", uri, p)
		}
		segs := strings.Split(p, "/")[2:]
		for _, s := range segs {
			if s == "" || s == "." || s == ".." {
				t.Fatalf("%q → %q: bad segment %q", uri, p, s)
			}
		}
		if n := strings.Count(uri[len("volume:///"):], "/") + 1; n != len(segs) {
			t.Fatalf("%q → %q: %d URI segments became %d path segments", uri, p, n, len(segs))
		}
	})
}

type fakeResolver struct{}

func (fakeResolver) ResolveVolume(p string) (VolumeFile, error) {
	if strings.HasSuffix(p, ".png") {
		return VolumeFile{HostPath: "/h" + p, Size: 10, Head: pngBytes}, nil
	}
	if strings.HasSuffix(p, ".txt") {
		return VolumeFile{HostPath: "/h" + p, Size: 1, Head: []byte("x")}, nil
	}
	return VolumeFile{}, errors.New("no")
}

func FuzzCallToolResult(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":1},"isError":false}`))
	f.Add([]byte(`{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="},{"type":"resource_link","uri":"volume:///tmp/a.png"},{"type":"resource_link","uri":"volume:///tmp/b%2F.txt"}]}`))
	f.Add([]byte(`{"content":[{"type":"audio"},{"type":"resource_link","uri":"https://x","name":"n"},{"type":1}],"isError":true}`))
	f.Add([]byte(`{"content":{}}`))
	f.Fuzz(func(t *testing.T, result []byte) {
		if !json.Valid(result) {
			return
		}
		res, err := ParseCallToolResult(result)
		if err != nil {
			if code(err) != CodeInvalidResult {
				t.Fatalf("error %v", err)
			}
			return
		}
		view := BuildView(res, fakeResolver{})
		if len(view) != len(res.Content) {
			t.Fatalf("%d blocks became %d items", len(res.Content), len(view))
		}
		for i, it := range view {
			switch it.Type {
			case "text", "link", "file":
			case "note":
				if it.Text == "" {
					t.Fatalf("empty note for block %d", i)
				}
			case "image":
				if ImageType(it.Data) != it.MimeType && it.Source == "inline" {
					t.Fatalf("inline image %d: data is %q, mimeType %q", i, ImageType(it.Data), it.MimeType)
				}
			default:
				t.Fatalf("item type %q", it.Type)
			}
			if _, err := json.Marshal(it); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestParseCallToolResult(t *testing.T) {
	r, err := ParseCallToolResult(json.RawMessage(`{"content":[{"type":"text","text":"x"}],"structuredContent":[1,"two"],"isError":true,"_meta":{"m":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || string(r.StructuredContent) != `[1,"two"]` || string(r.Meta) != `{"m":1}` || len(r.Content) != 1 || r.Content[0].Type != "text" || string(r.Content[0].Raw) != `{"type":"text","text":"x"}` {
		t.Errorf("result = %+v", r)
	}
	for _, ok := range []string{`{"content":[]}`, `{"content":[],"isError":null}`, `{"content":[],"structuredContent":null}`, `{"content":[{"type":"weird","x":1}]}`} {
		if _, err := ParseCallToolResult(json.RawMessage(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{`[]`, `null`, `"x"`, `{}`, `{"content":null}`, `{"content":{}}`, `{"content":[1]}`, `{"content":[{}]}`, `{"content":[{"type":null}]}`, `{"content":[{"type":5}]}`, `{"content":[],"isError":"true"}`, `{"content":[],"isError":1}`} {
		if _, err := ParseCallToolResult(json.RawMessage(bad)); code(err) != CodeInvalidResult {
			t.Errorf("%s: err = %v, want invalid_result", bad, err)
		}
	}
}
