// Command big is a deliberately large Go wasip1 module (many standard
// packages linked in) for the module-check benchmark: uploads of real Go
// guests are this size.
package main

import (
	"compress/gzip"
	"crypto/tls"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"go/parser"
	"go/token"
	"html/template"
	"image/png"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"text/tabwriter"
)

func main() {
	// Reference each package so the linker keeps it.
	_ = gzip.NewWriter(os.Stdout)
	_ = tls.Config{}
	_, _ = json.Marshal(map[string]int{"a": 1})
	_, _ = xml.Marshal(struct{ A int }{1})
	_, _ = parser.ParseExpr("1+2")
	_ = token.NewFileSet()
	_ = template.Must(template.New("x").Parse("{{.}}"))
	_ = png.Encoder{}
	_ = new(big.Int).Exp(big.NewInt(2), big.NewInt(100), nil)
	_ = httptest.NewRecorder()
	_, _ = http.NewRequest("GET", "http://example.invalid/", nil)
	_ = regexp.MustCompile(`a+b`)
	_ = tabwriter.NewWriter(os.Stdout, 0, 8, 1, ' ', 0)
	fmt.Println("big")
}
