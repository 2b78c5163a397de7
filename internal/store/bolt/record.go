package bolt

import (
	"encoding/binary"
	"fmt"

	"github.com/allot-dev/allot/internal/store"
)

// A record is how one key is kept in the "kv" bucket: CreateRev and ModRev
// as big-endian uint64, then the value.
const recordHeader = 16

var (
	bucketMeta = []byte("meta")
	bucketKV   = []byte("kv")
	keyVersion = []byte("version")
	keyRev     = []byte("rev")
)

// formatVersion is written at creation and checked on Open.
const formatVersion = 1

func encodeRecord(createRev, modRev int64, value []byte) []byte {
	b := make([]byte, recordHeader+len(value))
	binary.BigEndian.PutUint64(b[0:8], uint64(createRev))
	binary.BigEndian.PutUint64(b[8:16], uint64(modRev))
	copy(b[recordHeader:], value)
	return b
}

// decodeRecord copies the record of key out of bbolt's memory.
func decodeRecord(key string, b []byte) (store.KV, error) {
	if len(b) < recordHeader {
		return store.KV{}, fmt.Errorf("store/bolt: corrupt record for %q: %d bytes", key, len(b))
	}
	kv := store.KV{
		Key:       key,
		CreateRev: int64(binary.BigEndian.Uint64(b[0:8])),
		ModRev:    int64(binary.BigEndian.Uint64(b[8:16])),
		Value:     append([]byte{}, b[recordHeader:]...),
	}
	return kv, nil
}

// modRevOf returns the ModRev in an encoded record, 0 for a missing one.
func modRevOf(b []byte) int64 {
	if len(b) < recordHeader {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b[8:16]))
}

func encodeUint(v int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(v))
}

func decodeUint(what string, b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("store/bolt: corrupt %s: %d bytes", what, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}
