package replication

import (
	"encoding/binary"
	"testing"
)

// pgoutput messages as the log reader stores them, built by hand: the
// renderer needs no server.
func relationMsg(id uint32, schema, name string, cols ...string) []byte {
	m := binary.BigEndian.AppendUint32([]byte{kindRelation}, id)
	m = append(append(m, schema...), 0)
	m = append(append(m, name...), 0)
	m = append(m, 'd')
	m = binary.BigEndian.AppendUint16(m, uint16(len(cols)))
	for i, c := range cols {
		flags := byte(0)
		if i == 0 {
			flags = 1 // the key
		}
		m = append(m, flags)
		m = append(append(m, c...), 0)
		m = binary.BigEndian.AppendUint32(m, 25) // text
		m = binary.BigEndian.AppendUint32(m, 0xffffffff)
	}
	return m
}

func appendTuple(m []byte, vals ...string) []byte {
	m = binary.BigEndian.AppendUint16(m, uint16(len(vals)))
	for _, v := range vals {
		m = append(m, 't')
		m = binary.BigEndian.AppendUint32(m, uint32(len(v)))
		m = append(m, v...)
	}
	return m
}

func changeMsgOf(kind byte, id uint32, vals ...string) []byte {
	m := binary.BigEndian.AppendUint32([]byte{kind}, id)
	switch kind {
	case kindDelete:
		m = append(m, 'K')
	default:
		m = append(m, 'N')
	}
	return appendTuple(m, vals...)
}

func commitMsg(lsn uint64) []byte {
	m := []byte{kindCommit, 0}
	m = binary.BigEndian.AppendUint64(m, lsn)
	m = binary.BigEndian.AppendUint64(m, lsn+8)
	return binary.BigEndian.AppendUint64(m, 0)
}

// BenchmarkRender renders a stream of small transactions (inserts, an
// update, a delete, a commit) into 40 KB buffers, the agent's hot path:
// allocs/op is what a change to render must not raise.
func BenchmarkRender(b *testing.B) {
	r := &renderer{subscription: "dbrig", commitBatch: DefaultCommitBatchSize, bufferSize: 40 << 10, guard: true, runID: "bench",
		rels: map[uint32]*relInfo{}, prepared: map[string]bool{}, keys: map[TableName][]string{}}
	buf := &buffer{msg: make([]byte, 0, 64<<10)}
	r.startBuffer(buf)
	if _, err := r.render(1, kindRelation, 0, relationMsg(16384, "public", "t", "id", "v")); err != nil {
		b.Fatal(err)
	}
	xact := [][]byte{
		changeMsgOf(kindInsert, 16384, "1", "one"),
		changeMsgOf(kindInsert, 16384, "2", "two"),
		changeMsgOf(kindUpdate, 16384, "1", "uno"),
		changeMsgOf(kindDelete, 16384, "2"),
		commitMsg(1 << 32),
	}
	b.ReportAllocs()
	cmd := int64(1)
	for b.Loop() {
		for _, msg := range xact {
			cmd++
			for {
				full, err := r.render(cmd, msg[0], 0, msg)
				if err != nil {
					b.Fatal(err)
				}
				if !full {
					break
				}
				r.seal()
				buf.reset(cmd)
				r.startBuffer(buf)
			}
		}
	}
}
