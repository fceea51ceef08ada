package sqlite_test

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// benchText is n bytes of a chat's JSON: English words, as prompts and
// answers are, with a key in it for the redaction to find.
func benchText(r *rand.Rand, n int) []byte {
	words := strings.Fields("the quick brown fox jumps over a lazy dog while our gateway routes every call to the region with quota left and answers in json")
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","messages":[{"role":"user","content":"use sk-proj-abcdefghijklmnopqrstuvwxyz0123 `)
	for b.Len() < n-4 {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	b.WriteString(`"}]}`)
	return []byte(b.String()[:n])
}

// BenchmarkRecordBodies is what keeping bodies costs the store: the time
// of RecordUsage per record (batches of 100, as the writer sends them on
// a busy gateway, redaction included) and the bytes per record in the
// SQLite file (every table and index, after a checkpoint), without
// bodies and with them:
//
//	go test ./ledger/sqlite -run '^$' -bench RecordBodies -benchtime 50x
func BenchmarkRecordBodies(b *testing.B) {
	for _, tc := range []struct {
		name     string
		req, res int // body sizes; 0: no bodies
	}{
		{"no bodies", 0, 0},
		{"2KiB and 1KiB", 2 << 10, 1 << 10},
		{"16KiB and 16KiB", 16 << 10, 16 << 10},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "bodies.db")
			s, err := sqlite.Open(ctx, path)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			r := rand.New(rand.NewPCG(1, 2))
			const batchSize = 100
			var batches [][]ledger.Usage
			for i := range b.N {
				batch := make([]ledger.Usage, batchSize)
				for j := range batch {
					u := benchRequest(r, i*batchSize+j)
					if tc.req > 0 {
						u.Bodies = &ledger.Bodies{Request: benchText(r, tc.req), Response: benchText(r, tc.res),
							RequestSize: int64(tc.req), ResponseSize: int64(tc.res)}
					}
					batch[j] = u
				}
				batches = append(batches, batch)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := s.RecordUsage(ctx, batches[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			records := float64(b.N * batchSize)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/records, "µs/record")
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(fileBytes(b, path))/records, "bytes/record")
		})
	}
}

// fileBytes is the size of the SQLite database at path once its WAL is
// checkpointed into it.
func fileBytes(b *testing.B, path string) int64 {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var pages, size int64
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRow("PRAGMA page_size").Scan(&size); err != nil {
		b.Fatal(err)
	}
	return pages * size
}
