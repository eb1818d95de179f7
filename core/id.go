package core

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// NewID returns a new id with a prefix, e.g. run_019abc3f2e1d9c4e5f6a7b8c9d0e:
// the time it was made, in unix milliseconds as 12 hex digits, then 64
// random bits as 16. Ids made later sort after earlier ones (those of one
// millisecond in no set order), and none repeats in practice.
//
// Time first because ids are the primary keys, and the event log's key
// begins with its run's id. Random ids put each new row in a random leaf
// of those indexes, so one commit of the events of twenty runs rewrote
// about seven pages of the log's key alone. Ids in the order they were
// made put every live run's rows at the right edge of each index: with 20
// concurrent chat sessions on SQLite, 21 pages a commit became 14.5, and
// 15.9 pages of log a turn became 12.9.
//
// An id is a name, never a secret: the API checks who may see what.
func NewID(prefix string) string { return newIDAt(prefix, time.Now()) }

// newIDAt is NewID as if made at t.
func newIDAt(prefix string, t time.Time) string {
	var b [14]byte
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(b[:6], ms[2:])
	_, _ = rand.Read(b[6:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
