// Command cpu is the CPU-bound Go guest of the fuel benchmarks: rounds of
// sha256 over a buffer, JSON encoding and decoding of records, and sorting
// them, with no input and one line of output (a digest, so the work cannot
// be optimised away and a metered run can be compared with an unmetered
// one). ROUNDS in the environment scales it; the default takes a few
// hundred milliseconds under wazero.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
)

type record struct {
	ID    int               `json:"id"`
	Name  string            `json:"name"`
	Score float64           `json:"score"`
	Tags  []string          `json:"tags"`
	Attrs map[string]string `json:"attrs"`
}

func main() {
	rounds := 5
	if s := os.Getenv("ROUNDS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			rounds = n
		}
	}
	h := sha256.New()
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for r := 0; r < rounds; r++ {
		for i := 0; i < 16; i++ {
			h.Write(buf)
		}
		recs := make([]record, 500)
		for i := range recs {
			recs[i] = record{
				ID:    (i*7919 + r) % 1000,
				Name:  fmt.Sprintf("record-%d-%d", r, i),
				Score: float64((i*31+r)%977) / 3.0,
				Tags:  []string{"a", "b", strconv.Itoa(i % 13)},
				Attrs: map[string]string{"k": strconv.Itoa(i), "round": strconv.Itoa(r)},
			}
		}
		b, err := json.Marshal(recs)
		if err != nil {
			panic(err)
		}
		var back []record
		if err := json.Unmarshal(b, &back); err != nil {
			panic(err)
		}
		sort.Slice(back, func(i, j int) bool {
			if back[i].ID != back[j].ID {
				return back[i].ID < back[j].ID
			}
			return back[i].Name < back[j].Name
		})
		h.Write(b[:len(b)/2])
		h.Write([]byte(back[0].Name + back[len(back)-1].Name))
	}
	fmt.Println(hex.EncodeToString(h.Sum(nil)))
}
