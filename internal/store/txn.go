package store

import (
	"fmt"
	"unicode/utf8"
)

// Limits on input accepted by every backend.
const (
	MaxKeyLen   = 1 << 10   // bytes in a key or list/watch prefix
	MaxValueLen = 3 << 19   // 1.5 MiB in a value
	MaxTxnOps   = 10_000    // puts and deletes in one Txn
	MaxTxnConds = MaxTxnOps // conditions in one Txn
	MaxTxnBytes = 64 << 20  // keys and values written by one Txn
)

// Txn is an atomic, conditional write: if every condition in If holds, all of
// Then is applied at one new revision; otherwise nothing is written. A key may
// appear at most once in Then.
type Txn struct {
	If   []Cond
	Then []Op
}

// Cond holds when Key's ModRev equals ModRev; ModRev 0 means Key is absent.
type Cond struct {
	Key    string
	ModRev int64
}

// Op is a put or a delete of one key. Deleting an absent key is a no-op.
type Op struct {
	Type  OpType
	Key   string
	Value []byte // Put only
}

// ModRevIs is the condition that key was last written at rev.
func ModRevIs(key string, rev int64) Cond { return Cond{Key: key, ModRev: rev} }

// Absent is the condition that key does not exist.
func Absent(key string) Cond { return Cond{Key: key} }

// PutOp writes value under key.
func PutOp(key string, value []byte) Op { return Op{Type: Put, Key: key, Value: value} }

// DeleteOp removes key.
func DeleteOp(key string) Op { return Op{Type: Delete, Key: key} }

// InvalidError reports malformed input and the field that holds it, e.g.
// "then[3].key". It matches ErrInvalid.
type InvalidError struct {
	Field string
	Msg   string
}

func (e *InvalidError) Error() string { return ErrInvalid.Error() + ": " + e.Field + ": " + e.Msg }

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// ConflictError reports a Txn condition that did not hold. It matches
// ErrConflict.
type ConflictError struct {
	Key string
	// Want is the ModRev the condition asked for (0: absent); Got is the
	// key's ModRev when the txn was applied (0: absent).
	Want, Got int64
}

func (e *ConflictError) Error() string {
	switch {
	case e.Want == 0:
		return fmt.Sprintf("%v: %s: exists at mod revision %d, want absent", ErrConflict, e.Key, e.Got)
	case e.Got == 0:
		return fmt.Sprintf("%v: %s: absent, want mod revision %d", ErrConflict, e.Key, e.Want)
	}
	return fmt.Sprintf("%v: %s: mod revision is %d, want %d", ErrConflict, e.Key, e.Got, e.Want)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// ValidateKey checks a key: non-empty, valid UTF-8, at most MaxKeyLen bytes.
// field names the key in the returned *InvalidError.
func ValidateKey(field, key string) error {
	switch {
	case key == "":
		return &InvalidError{Field: field, Msg: "must not be empty"}
	case len(key) > MaxKeyLen:
		return &InvalidError{Field: field, Msg: fmt.Sprintf("is %d bytes, limit %d", len(key), MaxKeyLen)}
	case !utf8.ValidString(key):
		return &InvalidError{Field: field, Msg: "is not valid UTF-8"}
	}
	return nil
}

// ValidatePrefix checks a list or watch prefix: like a key, but may be empty.
func ValidatePrefix(field, prefix string) error {
	if prefix == "" {
		return nil
	}
	return ValidateKey(field, prefix)
}

// Validate checks txn against the limits every backend enforces. It never
// panics; the error is an *InvalidError naming the first bad field.
func (txn Txn) Validate() error {
	if len(txn.If) > MaxTxnConds {
		return &InvalidError{Field: "if", Msg: fmt.Sprintf("has %d conditions, limit %d", len(txn.If), MaxTxnConds)}
	}
	if len(txn.Then) > MaxTxnOps {
		return &InvalidError{Field: "then", Msg: fmt.Sprintf("has %d operations, limit %d", len(txn.Then), MaxTxnOps)}
	}
	for i, c := range txn.If {
		if err := ValidateKey(fmt.Sprintf("if[%d].key", i), c.Key); err != nil {
			return err
		}
		if c.ModRev < 0 {
			return &InvalidError{Field: fmt.Sprintf("if[%d].mod_rev", i), Msg: fmt.Sprintf("is %d, must be >= 0", c.ModRev)}
		}
	}
	seen := make(map[string]int, len(txn.Then))
	total := 0
	for i, op := range txn.Then {
		if err := ValidateKey(fmt.Sprintf("then[%d].key", i), op.Key); err != nil {
			return err
		}
		if j, dup := seen[op.Key]; dup {
			return &InvalidError{Field: fmt.Sprintf("then[%d].key", i), Msg: fmt.Sprintf("%q already written by then[%d]", op.Key, j)}
		}
		seen[op.Key] = i
		switch op.Type {
		case Put:
			if len(op.Value) > MaxValueLen {
				return &InvalidError{Field: fmt.Sprintf("then[%d].value", i), Msg: fmt.Sprintf("is %d bytes, limit %d", len(op.Value), MaxValueLen)}
			}
		case Delete:
			if len(op.Value) != 0 {
				return &InvalidError{Field: fmt.Sprintf("then[%d].value", i), Msg: "must be empty for a delete"}
			}
		default:
			return &InvalidError{Field: fmt.Sprintf("then[%d].type", i), Msg: fmt.Sprintf("unknown %v", op.Type)}
		}
		total += len(op.Key) + len(op.Value)
		if total > MaxTxnBytes {
			return &InvalidError{Field: "then", Msg: fmt.Sprintf("writes more than %d bytes", MaxTxnBytes)}
		}
	}
	return nil
}
