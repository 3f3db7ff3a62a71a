package protocol

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// ViewItem is one item of the model view (host contract §5; the "view"
// items of the CLI's JSON output).
type ViewItem struct {
	// Type is "text", "image", "file", "link" or "note".
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	// Bytes is an image's size in bytes.
	Bytes int64 `json:"bytes,omitempty"`
	// Source is "inline" for an image sent as base64, or the volume:/// URI
	// of an image file.
	Source string `json:"source,omitempty"`
	URI    string `json:"uri,omitempty"`
	// Path is the guest path (/volume/…) of a file or image file.
	Path string `json:"path,omitempty"`
	// HostPath is where the runtime's resolver found that file.
	HostPath string `json:"hostPath,omitempty"`
	// Size is a file's size in bytes.
	Size int64 `json:"size,omitempty"`
	// Data holds the decoded bytes of an inline image.
	Data []byte `json:"-"`
}

// SniffLen is how many leading bytes of a file ImageType needs.
const SniffLen = 16

// VolumeFile is a resolved volume:/// link target.
type VolumeFile struct {
	HostPath string
	Size     int64
	// Head is the file's first bytes, at least min(SniffLen, Size) of them,
	// so BuildView can tell an image file without opening it itself.
	Head []byte
}

// VolumeResolver finds the regular file a guest path under /volume names
// (for example "/volume/tmp/chart 1.png"), confined to this call's volume
// mounts: no "..", no symlink leaving a mount, nothing but a regular file.
// The runtime implements it on top of os.Root. The error's text is shown to
// the model in a note, so it should say why without host paths.
type VolumeResolver interface {
	ResolveVolume(guestPath string) (VolumeFile, error)
}

// The image types a model view shows.
const (
	MimePNG  = "image/png"
	MimeJPEG = "image/jpeg"
	MimeGIF  = "image/gif"
	MimeWebP = "image/webp"
)

// ImageType sniffs the magic bytes of PNG, JPEG, GIF and WebP and returns the
// MIME type, or "" for anything else.
func ImageType(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return MimePNG
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return MimeJPEG
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return MimeGIF
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return MimeWebP
	}
	return ""
}

func allowedImage(m string) bool {
	return m == MimePNG || m == MimeJPEG || m == MimeGIF || m == MimeWebP
}

// BuildView turns a result's content into the model view, one item per
// block, in order (host contract §5). volumes may be nil (no volume links
// resolve, for example outside a call).
//
// Choices: an image's mimeType compares case-insensitively (and is reported
// lowercased); its data is standard base64 (RFC 4648 §4), padding optional,
// line breaks ignored, URL-safe alphabet refused; the bytes must be an image
// of the declared type. A volume:/// link is decoded by VolumePath; the
// target's type comes from its magic bytes (VolumeFile.Head), never from the
// link's mimeType or the file name.
func BuildView(res CallToolResult, volumes VolumeResolver) []ViewItem {
	view := make([]ViewItem, 0, len(res.Content))
	for _, b := range res.Content {
		view = append(view, viewBlock(b, volumes))
	}
	return view
}

func note(format string, args ...any) ViewItem {
	return ViewItem{Type: "note", Text: fmt.Sprintf(format, args...)}
}

func viewBlock(b ContentBlock, volumes VolumeResolver) ViewItem {
	switch b.Type {
	case "text":
		t, ok := b.str("text")
		if !ok {
			return note("text block omitted: it has no string \"text\"")
		}
		return ViewItem{Type: "text", Text: t}
	case "image":
		return viewImage(b)
	case "resource_link":
		return viewLink(b, volumes)
	}
	return note("%s block omitted", quoteShort(b.Type, 40))
}

func viewImage(b ContentBlock) ViewItem {
	mime, ok := b.str("mimeType")
	if !ok {
		return note("image omitted: it has no string mimeType")
	}
	mime = strings.ToLower(mime)
	if !allowedImage(mime) {
		return note("image omitted: mimeType %s is not one of image/png, image/jpeg, image/gif, image/webp", quoteShort(mime, 60))
	}
	data, ok := b.str("data")
	if !ok {
		return note("image omitted: it has no string data")
	}
	raw, err := decodeBase64(data)
	if err != nil {
		return note("image omitted: its data is not valid base64 (%v)", err)
	}
	if got := ImageType(raw); got != mime {
		if got == "" {
			return note("image omitted: its bytes are not %s data (the magic bytes do not match)", mime)
		}
		return note("image omitted: declared %s but the bytes are %s", mime, got)
	}
	return ViewItem{Type: "image", MimeType: mime, Bytes: int64(len(raw)), Source: "inline", Data: raw}
}

// decodeBase64 reads standard base64 with or without padding; line breaks
// are skipped by encoding/base64 itself.
func decodeBase64(s string) ([]byte, error) {
	if strings.HasSuffix(strings.TrimRight(s, "\r\n"), "=") {
		return base64.StdEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

func viewLink(b ContentBlock, volumes VolumeResolver) ViewItem {
	uri, ok := b.str("uri")
	if !ok {
		return note("resource_link omitted: it has no string uri")
	}
	if !hasScheme(uri, "volume") {
		name, _ := b.str("name")
		if name == "" {
			return ViewItem{Type: "link", Text: uri, URI: uri}
		}
		return ViewItem{Type: "link", Text: name + ": " + uri, URI: uri}
	}
	path, err := VolumePath(uri)
	if err != nil {
		return note("the link %s does not resolve: %v", quoteShort(uri, 200), err)
	}
	if volumes == nil {
		return note("the link %s does not resolve: no volume is mounted here", quoteShort(uri, 200))
	}
	f, err := volumes.ResolveVolume(path)
	if err != nil {
		return note("the link %s does not resolve: %v", quoteShort(uri, 200), err)
	}
	if mime := ImageType(f.Head); mime != "" {
		return ViewItem{Type: "image", MimeType: mime, Bytes: f.Size, Source: uri, URI: uri, Path: path, HostPath: f.HostPath}
	}
	item := ViewItem{Type: "file", URI: uri, Path: path, HostPath: f.HostPath, Size: f.Size}
	item.MimeType, _ = b.str("mimeType")
	return item
}

// hasScheme reports whether uri starts with scheme + ":", comparing the
// scheme case-insensitively as RFC 3986 says.
func hasScheme(uri, scheme string) bool {
	return len(uri) > len(scheme) && uri[len(scheme)] == ':' && strings.EqualFold(uri[:len(scheme)], scheme)
}

// VolumePath turns a volume:/// URI into the guest path it names:
// "volume:///tmp/chart%201.png" → "/volume/tmp/chart 1.png". Each segment is
// percent-decoded on its own, so "%2F" cannot make a new segment (it is
// refused: a file name cannot contain "/"). Refused: another form than
// volume:///…, a query or fragment, empty segments (including a trailing
// "/"), "." and ".." (also when percent-encoded), NUL, and malformed "%"
// escapes. The scheme compares case-insensitively.
func VolumePath(uri string) (string, error) {
	if !hasScheme(uri, "volume") {
		return "", errors.New("it is not a volume: URI")
	}
	rest := uri[len("volume:"):]
	if !strings.HasPrefix(rest, "///") {
		return "", errors.New("a volume URI must start with volume:/// (no host part)")
	}
	rest = rest[3:]
	if strings.ContainsAny(rest, "?#") {
		return "", errors.New("a volume URI has no query or fragment (percent-encode '?' and '#' in file names)")
	}
	if rest == "" {
		return "", errors.New("it names no file")
	}
	var b strings.Builder
	b.Grow(len("/volume") + len(rest))
	b.WriteString("/volume")
	for seg := range strings.SplitSeq(rest, "/") {
		d, err := decodeSegment(seg)
		if err != nil {
			return "", err
		}
		b.WriteByte('/')
		b.WriteString(d)
	}
	return b.String(), nil
}

func decodeSegment(seg string) (string, error) {
	if seg == "" {
		return "", errors.New("it has an empty path segment")
	}
	if !strings.Contains(seg, "%") {
		if seg == "." || seg == ".." {
			return "", fmt.Errorf("it has a %q segment", seg)
		}
		if strings.IndexByte(seg, 0) >= 0 {
			return "", errors.New("it contains a NUL byte")
		}
		return seg, nil
	}
	out := make([]byte, 0, len(seg))
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '%' {
			out = append(out, c)
			continue
		}
		if i+2 >= len(seg) || !isHex(seg[i+1:i+3]) {
			return "", fmt.Errorf("it has a malformed percent escape in %s", quoteShort(seg, 60))
		}
		out = append(out, unhex(seg[i+1])<<4|unhex(seg[i+2]))
		i += 2
	}
	d := string(out)
	switch {
	case d == "." || d == "..":
		return "", fmt.Errorf("it has a %q segment", d)
	case strings.IndexByte(d, 0) >= 0:
		return "", errors.New("it contains a NUL byte")
	case strings.IndexByte(d, '/') >= 0:
		return "", errors.New("a segment contains an encoded '/' (%2F); a file name cannot contain '/'")
	}
	return d, nil
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
