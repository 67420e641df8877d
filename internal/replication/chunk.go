package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A chunk is one row of a publication's commands table: consecutive
// pgoutput messages (Begin, Relation, Insert, Update, Delete, Truncate,
// Commit) of committed source transactions, in commit order, stored
// together and compressed. A message's command id is the chunk's first id
// plus its place in the chunk. Storing a change once, compactly, instead
// of as a row of its own keeps the distribution database's writes (heap
// and WAL) and the agent's reads, which cross the WAN in pull mode, to a
// fraction of the changes' size.
//
// The stored form is one header byte (chunkRaw or chunkZstd) followed by
// the messages, each as a uvarint length and the message, compressed as a
// whole when the header says so.
const (
	chunkRaw  byte = 0
	chunkZstd byte = 1
)

// maxChunkBytes is the most raw message bytes one chunk holds; a larger
// source transaction spans several chunks.
const maxChunkBytes = 1 << 20

// chunkBuilder gathers the messages of the next chunk.
type chunkBuilder struct {
	raw     []byte
	first   int64 // command id of the first message (0: empty)
	n       int64 // messages
	changes int64 // Insert, Update, Delete, Truncate
	xacts   int64 // Commit messages
}

func (c *chunkBuilder) empty() bool { return c.n == 0 }

func (c *chunkBuilder) add(cmd int64, msg []byte) {
	if c.n == 0 {
		c.first = cmd
	}
	c.raw = binary.AppendUvarint(c.raw, uint64(len(msg)))
	c.raw = append(c.raw, msg...)
	c.n++
	switch msg[0] {
	case kindInsert, kindUpdate, kindDelete, kindTruncate:
		c.changes++
	case kindCommit:
		c.xacts++
	}
}

func (c *chunkBuilder) last() int64 { return c.first + c.n - 1 }

func (c *chunkBuilder) reset() {
	c.raw = c.raw[:0]
	c.first, c.n, c.changes, c.xacts = 0, 0, 0, 0
}

// codec compresses and decompresses chunks. One codec serves one goroutine.
type codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
	buf []byte
}

var codecPool = sync.Pool{New: func() any {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false))
	if err != nil {
		panic(err) // only for invalid options
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		panic(err)
	}
	return &codec{enc: enc, dec: dec}
}}

func getCodec() *codec  { return codecPool.Get().(*codec) }
func putCodec(c *codec) { codecPool.Put(c) }

// encode returns the stored form of raw messages: compressed unless that
// does not make them smaller.
func (c *codec) encode(dst, raw []byte) []byte {
	dst = append(dst[:0], chunkZstd)
	dst = c.enc.EncodeAll(raw, dst)
	if len(dst) >= len(raw)+1 {
		dst = append(dst[:0], chunkRaw)
		dst = append(dst, raw...)
	}
	return dst
}

// decode returns a chunk's raw messages; the result is valid until the
// next call.
func (c *codec) decode(stored []byte) ([]byte, error) {
	if len(stored) == 0 {
		return nil, errors.New("empty chunk")
	}
	switch stored[0] {
	case chunkRaw:
		return stored[1:], nil
	case chunkZstd:
		out, err := c.dec.DecodeAll(stored[1:], c.buf[:0])
		if err != nil {
			return nil, fmt.Errorf("decompress a chunk: %w", err)
		}
		c.buf = out
		return out, nil
	}
	return nil, fmt.Errorf("chunk of unknown form %d", stored[0])
}

// eachMessage calls f for every message of a chunk's raw messages with its
// command id; f's message is valid only during the call.
func eachMessage(raw []byte, first int64, f func(cmd int64, msg []byte) error) error {
	cmd := first
	for len(raw) > 0 {
		n, k := binary.Uvarint(raw)
		if k <= 0 || uint64(len(raw)-k) < n || n == 0 {
			return fmt.Errorf("chunk at command %d: a truncated message", cmd)
		}
		if err := f(cmd, raw[k:k+int(n)]); err != nil {
			return err
		}
		raw = raw[k+int(n):]
		cmd++
	}
	return nil
}
